//! Strongly connected components ([`strongly_connected_components`]) and
//! the cycles among them ([`cycles`]).

use super::Adjacency;

/// The strongly connected components of a graph: the classes of nodes that
/// can each reach every other node of their class.
///
/// Components are numbered `0..len()` in *reverse topological order*: when
/// an edge leads from component `a` to another component `b`, then
/// `b < a`. (This is the order in which Tarjan's algorithm, started at
/// nodes `0, 1, …` and following successors in order, completes them.)
/// Each component's members are sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components {
    /// Each node's component.
    of: Vec<usize>,
    /// Every node, grouped by component, sorted within a group.
    nodes: Vec<usize>,
    /// Where each component's group starts in `nodes`; one more entry than
    /// there are components, the last being `nodes.len()`.
    starts: Vec<usize>,
}

impl Components {
    /// The number of components.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether there are none (the graph has no nodes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The component `node` belongs to; `None` if it is not a node.
    pub fn component_of(&self, node: usize) -> Option<usize> {
        self.of.get(node).copied()
    }

    /// The nodes of `component`, sorted; empty if there is no such
    /// component.
    pub fn members(&self, component: usize) -> &[usize] {
        match (self.starts.get(component), self.starts.get(component + 1)) {
            (Some(&start), Some(&end)) => self.nodes.get(start..end).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Every component's members, in component order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[usize]> + '_ {
        (0..self.len()).map(|c| self.members(c))
    }

    /// Whether `component` holds a cycle: more than one node, or one node
    /// with an edge to itself.
    pub fn is_cycle<G: Adjacency + ?Sized>(&self, graph: &G, component: usize) -> bool {
        match self.members(component) {
            [] => false,
            [one] => graph.successors(*one).contains(one),
            _ => true,
        }
    }
}

/// The strongly connected components of `graph`, by Tarjan's algorithm run
/// with an explicit stack (linear in nodes and edges; no recursion, so long
/// chains cannot overflow the stack).
///
/// ```
/// use troupe_router::algo::strongly_connected_components;
///
/// // 0 <-> 1 -> 2
/// let graph = vec![vec![1], vec![0, 2], vec![]];
/// let components = strongly_connected_components(&graph);
/// // Reverse topological order: the sink {2} comes first.
/// assert_eq!(components.iter().collect::<Vec<_>>(), [&[2][..], &[0, 1][..]]);
/// assert!(components.is_cycle(&graph, 1));
/// assert!(!components.is_cycle(&graph, 0));
/// ```
// Every index below is a node `< n`: roots come from `0..n` and successors
// are checked before they are followed, so the per-node vectors cannot be
// overrun, and plain indexing keeps the algorithm readable.
#[allow(clippy::indexing_slicing)]
pub fn strongly_connected_components<G: Adjacency + ?Sized>(graph: &G) -> Components {
    const UNSEEN: usize = usize::MAX;
    let n = graph.node_count();
    let mut order = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    // The walk's own stack: (node, position of the next successor to follow).
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut of = vec![0; n];
    let mut nodes = Vec::with_capacity(n);
    let mut starts = vec![0];

    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, 0));

        while let Some(top) = calls.last_mut() {
            let (v, pos) = *top;
            if let Some(&w) = graph.successors(v).get(pos) {
                top.1 += 1;
                if w >= n {
                    continue;
                }
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            // Every successor of `v` is done: return to its caller.
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let component = starts.len() - 1;
                let start = nodes.len();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    of[w] = component;
                    nodes.push(w);
                    if w == v {
                        break;
                    }
                }
                nodes[start..].sort_unstable();
                starts.push(nodes.len());
            }
        }
    }
    Components { of, nodes, starts }
}

/// The strongly connected components that hold a cycle (more than one
/// node, or a node with an edge to itself), each sorted, ordered by their
/// smallest node.
///
/// ```
/// use troupe_router::algo::cycles;
///
/// // 0 -> 1 -> 2 -> 0, 3 -> 3, 4 -> 5 <-> 6
/// let graph = vec![vec![1], vec![2], vec![0], vec![3], vec![5], vec![6], vec![5]];
/// assert_eq!(cycles(&graph), [vec![0, 1, 2], vec![3], vec![5, 6]]);
/// assert!(cycles(&vec![vec![1, 2], vec![2], vec![]]).is_empty());
/// ```
pub fn cycles<G: Adjacency + ?Sized>(graph: &G) -> Vec<Vec<usize>> {
    let components = strongly_connected_components(graph);
    let mut found: Vec<Vec<usize>> = (0..components.len())
        .filter(|&c| components.is_cycle(graph, c))
        .map(|c| components.members(c).to_vec())
        .collect();
    found.sort_unstable_by_key(|c| c.first().copied());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_numbered_sinks_first() {
        // 0 -> 1 -> 2 -> 1, 0 -> 3
        let graph = vec![vec![1, 3], vec![2], vec![1], vec![]];
        let c = strongly_connected_components(&graph);
        assert_eq!(c.iter().collect::<Vec<_>>(), [&[1, 2][..], &[3], &[0]]);
        assert_eq!(c.component_of(2), Some(0));
        assert_eq!(c.component_of(4), None);
        assert!(c.members(3).is_empty());
        assert!(!c.is_cycle(&graph, 3));
    }

    #[test]
    fn strangers_and_empty_graphs_are_harmless() {
        let graph = vec![vec![5, 0]];
        assert_eq!(cycles(&graph), [vec![0]]);
        let empty: Vec<Vec<usize>> = Vec::new();
        assert!(strongly_connected_components(&empty).is_empty());
    }

    #[test]
    fn long_chains_do_not_overflow_the_stack() {
        let n = 200_000;
        let ring: Vec<Vec<usize>> = (0..n).map(|v| vec![(v + 1) % n]).collect();
        let found = cycles(&ring);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), n);
        let chain: Vec<Vec<usize>> = (0..n).map(|v| vec![v + 1]).collect();
        assert_eq!(strongly_connected_components(&chain).len(), n);
    }
}
