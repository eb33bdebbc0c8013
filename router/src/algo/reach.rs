//! [`reachable`]: which nodes a set of roots leads to.

use super::Adjacency;

/// Marks the nodes reachable from `roots` (which count as reached):
/// `result[v]` is whether some path leads from a root to `v`.
///
/// Roots and successors that are not nodes are ignored. Linear in nodes and
/// edges; iterative.
///
/// ```
/// use troupe_router::algo::reachable;
///
/// let graph = vec![vec![1], vec![], vec![0]];
/// assert_eq!(reachable(&graph, [0]), [true, true, false]);
/// assert_eq!(reachable(&graph, [2, 99]), [true, true, true]);
/// ```
pub fn reachable<G: Adjacency + ?Sized>(
    graph: &G,
    roots: impl IntoIterator<Item = usize>,
) -> Vec<bool> {
    let mut seen = vec![false; graph.node_count()];
    let mut todo: Vec<usize> = Vec::new();
    let mut visit = |v: usize, todo: &mut Vec<usize>| {
        if let Some(flag) = seen.get_mut(v)
            && !*flag
        {
            *flag = true;
            todo.push(v);
        }
    };
    for root in roots {
        visit(root, &mut todo);
    }
    while let Some(v) = todo.pop() {
        for &w in graph.successors(v) {
            visit(w, &mut todo);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_edges_from_every_root_and_ignores_strangers() {
        let graph = vec![vec![1], vec![2, 9], vec![], vec![0]];
        assert_eq!(reachable(&graph, [0]), [true, true, true, false]);
        assert_eq!(reachable(&graph, [3]), [true; 4]);
        assert_eq!(reachable(&graph, []), [false; 4]);
        assert_eq!(reachable(&graph, [4]), [false; 4]);
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let n = 1_000_000;
        let graph: Vec<Vec<usize>> = (0..n).map(|v| vec![v + 1]).collect();
        assert!(reachable(&graph, [0]).into_iter().all(|r| r));
    }
}
