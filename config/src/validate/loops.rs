//! Loops with no exit: strongly connected components of a graph whose
//! internal transitions are all unconditional.

/// A transition between known nodes: from, to (indexes of node ids),
/// whether it always fires, and its index in `transitions`.
pub(super) type Edge = (usize, usize, bool, usize);

/// Strongly connected components whose internal transitions are all
/// unconditional (as the runtime judges them). Iterative, so a huge graph
/// cannot exhaust the stack.
pub(super) fn endless_cycles(n: usize, edges: &[Edge]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    let mut radj = vec![Vec::new(); n];
    for e in edges {
        adj[e.0].push(e.1);
        radj[e.1].push(e.0);
    }
    // Kosaraju: finishing order, then components on the reversed graph.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for s in 0..n {
        if seen[s] {
            continue;
        }
        let mut stack = vec![(s, 0usize)];
        seen[s] = true;
        while let Some((v, i)) = stack.pop() {
            if i < adj[v].len() {
                stack.push((v, i + 1));
                let w = adj[v][i];
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
            }
        }
    }
    let mut comp = vec![usize::MAX; n];
    let mut comps: Vec<Vec<usize>> = Vec::new();
    for &s in order.iter().rev() {
        if comp[s] != usize::MAX {
            continue;
        }
        let id = comps.len();
        let mut members = Vec::new();
        let mut stack = vec![s];
        comp[s] = id;
        while let Some(v) = stack.pop() {
            members.push(v);
            for &w in &radj[v] {
                if comp[w] == usize::MAX {
                    comp[w] = id;
                    stack.push(w);
                }
            }
        }
        comps.push(members);
    }
    let mut out = Vec::new();
    for (id, members) in comps.into_iter().enumerate() {
        let internal: Vec<_> = edges
            .iter()
            .filter(|e| comp[e.0] == id && comp[e.1] == id)
            .collect();
        let is_cycle = members.len() > 1 || !internal.is_empty();
        if is_cycle && internal.iter().all(|e| e.2) {
            let mut m = members;
            m.sort_unstable();
            out.push(m);
        }
    }
    out
}
