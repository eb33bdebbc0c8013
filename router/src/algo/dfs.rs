//! [`depth_first`]: a depth-first walk that finds the edges closing loops.

use super::Adjacency;

/// An edge that leads back to a node on the current path of a depth-first
/// walk (an ancestor, or the node itself): removing every back edge leaves
/// the reached part of the graph without cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BackEdge {
    /// The node the edge leaves.
    pub from: usize,
    /// Its position in `from`'s successor list (tells parallel edges apart).
    pub index: usize,
    /// The node it leads back to.
    pub to: usize,
}

/// What a [`depth_first`] walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepthFirst {
    /// Whether each node was reached from the roots.
    pub reached: Vec<bool>,
    /// The back edges, in the order the walk met them.
    pub back_edges: Vec<BackEdge>,
}

/// Walks `graph` depth first from each root in turn (skipping roots already
/// reached), following every node's successors in order, and classifies the
/// edges that lead to a node on the current path as back edges.
///
/// The walk is the one a recursive depth-first search would make, but with
/// an explicit stack, so long chains cannot overflow the thread's stack.
/// Roots and successors that are not nodes are ignored.
///
/// ```
/// use troupe_router::algo::{BackEdge, depth_first};
///
/// // write -> review -> write (a loop), review -> publish
/// let graph = vec![vec![1], vec![0, 2], vec![]];
/// let walk = depth_first(&graph, [0]);
/// assert_eq!(walk.back_edges, [BackEdge { from: 1, index: 0, to: 0 }]);
/// assert_eq!(walk.reached, [true, true, true]);
/// ```
// Every index below is a node `< n`: roots and successors are checked
// before they are followed, so the per-node vectors cannot be overrun.
#[allow(clippy::indexing_slicing)]
pub fn depth_first<G: Adjacency + ?Sized>(
    graph: &G,
    roots: impl IntoIterator<Item = usize>,
) -> DepthFirst {
    let n = graph.node_count();
    let mut reached = vec![false; n];
    let mut on_path = vec![false; n];
    let mut back_edges = Vec::new();
    // The current path: (node, position of the next successor to follow).
    let mut path: Vec<(usize, usize)> = Vec::new();
    for root in roots {
        if root >= n || reached[root] {
            continue;
        }
        reached[root] = true;
        on_path[root] = true;
        path.push((root, 0));
        while let Some(top) = path.last_mut() {
            let (v, index) = *top;
            let Some(&w) = graph.successors(v).get(index) else {
                on_path[v] = false;
                path.pop();
                continue;
            };
            top.1 += 1;
            if w >= n {
                continue;
            }
            if on_path[w] {
                back_edges.push(BackEdge {
                    from: v,
                    index,
                    to: w,
                });
            } else if !reached[w] {
                reached[w] = true;
                on_path[w] = true;
                path.push((w, 0));
            }
        }
    }
    DepthFirst {
        reached,
        back_edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_and_forward_edges_are_not_back_edges() {
        // 0 -> 1 -> 2, 0 -> 2 (forward), 3 -> 1 (cross, from a later root)
        let graph = vec![vec![1, 2], vec![2], vec![], vec![1]];
        let walk = depth_first(&graph, [0, 3]);
        assert!(walk.back_edges.is_empty());
        assert_eq!(walk.reached, [true; 4]);
    }

    #[test]
    fn parallel_edges_and_self_loops_are_each_reported() {
        let graph = vec![vec![1], vec![0, 1, 0, 7]];
        let walk = depth_first(&graph, [0, 0, 9]);
        let found: Vec<(usize, usize, usize)> = walk
            .back_edges
            .iter()
            .map(|e| (e.from, e.index, e.to))
            .collect();
        assert_eq!(found, [(1, 0, 0), (1, 1, 1), (1, 2, 0)]);
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let n = 1_000_000;
        let graph: Vec<Vec<usize>> = (0..n).map(|v| vec![v + 1, 0]).collect();
        let walk = depth_first(&graph, [0]);
        assert_eq!(walk.back_edges.len(), n);
    }
}
