//! Loops with no exit: strongly connected components of a graph whose
//! internal transitions are all unconditional.

use troupe_router::algo::strongly_connected_components;

/// A transition between known nodes: from, to (indexes of node ids),
/// whether it always fires, and its index in `transitions`.
pub(super) type Edge = (usize, usize, bool, usize);

/// Strongly connected components whose internal transitions are all
/// unconditional (as the runtime judges them), each with its members
/// sorted, in the order of their first transition in the file. The
/// components come from the router's iterative algorithm, so a huge graph
/// cannot exhaust the stack.
pub(super) fn endless_cycles(n: usize, edges: &[Edge]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for e in edges {
        adj[e.0].push(e.1);
    }
    let components = strongly_connected_components(&adj);
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for id in 0..components.len() {
        if !components.is_cycle(&adj, id) {
            continue;
        }
        let inside = |v: usize| components.component_of(v) == Some(id);
        let internal: Vec<&Edge> = edges
            .iter()
            .filter(|e| inside(e.0) && inside(e.1))
            .collect();
        if internal.iter().all(|e| e.2) {
            let first = internal.iter().map(|e| e.3).min().unwrap_or(0);
            out.push((first, components.members(id).to_vec()));
        }
    }
    out.sort_unstable_by_key(|(first, _)| *first);
    out.into_iter().map(|(_, members)| members).collect()
}
