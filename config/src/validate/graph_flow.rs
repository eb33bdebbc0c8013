//! How control flows through a `graph:` as the runtime will run it: nodes
//! no start reaches (an error at the node), an explicit `when: always`
//! beside conditional transitions (an error saying what it would do), and
//! `join: all` nodes waiting for a branch that may never fire (a warning).

use std::collections::VecDeque;

use troupe_runtime::graph::Join;

use super::checker::Checker;
use super::loops::Edge;
use crate::error::one_of;
use crate::schema::{ConditionForm, GraphSpec};
use crate::tree::FieldPath;

/// Whether transition `i` of `g` is a declared loop (taken back to an
/// earlier node: not an incoming edge that decides a start).
fn declared_loop(g: &GraphSpec, i: usize) -> bool {
    g.transitions
        .get(i)
        .is_some_and(|t| t.is_loop.unwrap_or(false) || t.max_iterations.is_some())
}

/// The start nodes as the runtime picks them: those of `start:`, else
/// the nodes no transition (but declared loops) enters.
fn starts(g: &GraphSpec, ids: &[String], edges: &[Edge]) -> Vec<usize> {
    if !g.start.is_empty() {
        return g
            .start
            .iter()
            .filter_map(|s| ids.iter().position(|i| i == s))
            .collect();
    }
    let mut has_in = vec![false; ids.len()];
    for e in edges.iter().filter(|e| !declared_loop(g, e.3)) {
        has_in[e.1] = true;
    }
    (0..ids.len()).filter(|&i| !has_in[i]).collect()
}

/// The nodes reached from `from` along the edges `keep` allows.
fn reached(n: usize, from: &[usize], edges: &[Edge], keep: impl Fn(&Edge) -> bool) -> Vec<bool> {
    let mut seen = vec![false; n];
    let mut queue: VecDeque<usize> = from.iter().copied().collect();
    for &s in from {
        seen[s] = true;
    }
    while let Some(v) = queue.pop_front() {
        for e in edges.iter().filter(|e| e.0 == v && keep(e)) {
            if !seen[e.1] {
                seen[e.1] = true;
                queue.push_back(e.1);
            }
        }
    }
    seen
}

/// Nodes no start node reaches, at the node; no start node at all, at
/// the graph. `edges` are the transitions between known nodes.
pub(super) fn check_reachable(
    c: &mut Checker<'_>,
    base: &FieldPath,
    g: &GraphSpec,
    ids: &[String],
    edges: &[Edge],
) {
    let from = starts(g, ids, edges);
    if from.is_empty() {
        if !ids.is_empty() {
            c.error(
                base,
                "no start node: every node has an incoming transition",
                Some(format!(
                    "`start:` naming the node that runs first, {}",
                    one_of(&ids.iter().map(String::as_str).collect::<Vec<_>>())
                )),
            );
        }
        return;
    }
    let seen = reached(ids.len(), &from, edges, |_| true);
    let names: Vec<&str> = from.iter().map(|&i| ids[i].as_str()).collect();
    for (i, id) in ids.iter().enumerate() {
        if !seen[i] {
            c.error(
                &base.key("nodes").index(i),
                format!(
                    "node `{id}` is unreachable: no path of transitions leads to it from the start node(s) {}, so it would never run",
                    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
                Some(format!(
                    "a transition to `{id}` from a node that runs, `{id}` in `start:`, or no node `{id}`"
                )),
            );
        }
    }
}

/// An explicit `when: always` on a node that also has conditional
/// transitions: the runtime would take it on every turn, beside whichever
/// condition holds (a fan-out, not a default), and refuses the mix as
/// ambiguous. Gives whether transition `i` is such a one (reported here).
pub(super) fn explicit_always_beside_conditions(
    c: &mut Checker<'_>,
    base: &FieldPath,
    g: &GraphSpec,
    ids: &[String],
    edges: &[Edge],
    e: &Edge,
) -> bool {
    let written = g.transitions.get(e.3).and_then(|t| t.when.as_ref());
    if !written.is_some_and(|w| w.0 == ConditionForm::Always) {
        return false;
    }
    let conditional: Vec<&str> = edges
        .iter()
        .filter(|o| o.0 == e.0 && !o.2)
        .map(|o| ids[o.1].as_str())
        .collect();
    let (from, to) = (&ids[e.0], &ids[e.1]);
    c.value_error(
        &base.key("transitions").index(e.3).key("when"),
        format!(
            "`when: always` from `{from}` fires after every turn of `{from}`, beside its conditional transition(s) to {}: `{to}` would run whatever they decide (a fan-out, not a default), which a graph refuses as ambiguous",
            conditional.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
        Some(format!(
            "`when: otherwise` to run `{to}` only when no condition of `{from}` holds, or a condition on this transition too"
        )),
    );
    true
}

/// `join: all` nodes with a branch that fires only if some condition
/// holds: when it does not, the node is skipped, and the run ends
/// `completed` without it.
pub(super) fn check_joins(
    c: &mut Checker<'_>,
    base: &FieldPath,
    g: &GraphSpec,
    ids: &[String],
    edges: &[Edge],
) {
    let from = starts(g, ids, edges);
    // Nodes that run on every run: reached from a start along transitions
    // that always fire (declared loops aside).
    let sure = reached(ids.len(), &from, edges, |e| e.2 && !declared_loop(g, e.3));
    for (i, n) in g.nodes.iter().enumerate() {
        if n.0.join != Some(Join::All) {
            continue;
        }
        let Some(node) = ids.iter().position(|x| x == n.id()) else {
            continue;
        };
        let incoming: Vec<&Edge> = edges
            .iter()
            .filter(|e| e.1 == node && !declared_loop(g, e.3))
            .collect();
        if incoming.len() < 2 {
            continue;
        }
        let Some(doubtful) = incoming.iter().find(|e| !(e.2 && sure[e.0])) else {
            continue;
        };
        let why = if doubtful.2 {
            format!(
                "`{}` itself runs only if a condition before it holds",
                ids[doubtful.0]
            )
        } else {
            "its `when:` may not hold".to_string()
        };
        c.warn(
            &base.key("nodes").index(i).key("join"),
            format!(
                "node `{}` has `join: all` and waits for all {} incoming transitions, but the one from `{}` (transitions[{}]) may never fire ({why}): then `{}` is skipped and the run ends `completed` without it; `join: all_that_can_arrive` (the default) runs it with the branches that fired",
                ids[node],
                incoming.len(),
                ids[doubtful.0],
                doubtful.3,
                ids[node]
            ),
        );
    }
}
