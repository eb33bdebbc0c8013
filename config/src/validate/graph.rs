//! `graph:`: nodes that run known agents under unique ids, transitions
//! between known nodes, no node mixing unconditional and conditional
//! transitions, and no loop without an exit.

use std::collections::BTreeSet;

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::conditions::check_condition;
use super::field_paths::check_field_conditions;
use super::graph_flow::{check_joins, check_reachable, explicit_always_beside_conditions};
use super::graph_switch::check_switches;
use super::loops::{Edge, endless_cycles};
use super::participants::plain_or_remote;
use super::retry::check_retry;
use crate::schema::{ConditionForm, ConfigFile, GraphSpec, WorkflowSpec};
use crate::tree::FieldPath;

/// Checks the graph at `base` of workflow `w`; gives its node ids.
pub(super) fn check_graph(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    g: &GraphSpec,
    w: &WorkflowSpec,
) -> Vec<String> {
    let ids = check_nodes(c, names, spec, base, g);
    let all: BTreeSet<String> = ids.iter().cloned().collect();
    let known_node = |c: &mut Checker<'_>, path: &FieldPath, name: &str| -> bool {
        if ids.iter().any(|i| i == name) {
            true
        } else {
            c.value_error(
                path,
                format!("unknown node `{name}`"),
                expected_names(ids.iter().map(String::as_str).collect()),
            );
            false
        }
    };
    for (i, s) in g.start.iter().enumerate() {
        known_node(c, &base.key("start").index(i), s);
    }
    let mut edges: Vec<Edge> = Vec::new();
    let mut all_known = g.start.iter().all(|s| ids.contains(s));
    for (i, t) in g.transitions.iter().enumerate() {
        let tp = base.key("transitions").index(i);
        let from = known_node(c, &tp.key("from"), &t.from);
        let to = known_node(c, &tp.key("to"), &t.to);
        if let Some(cond) = &t.when {
            check_condition(c, &tp.key("when"), cond, &ids, &all);
            if from {
                check_field_conditions(c, &tp.key("when"), cond, &t.from);
            }
        }
        if t.max_iterations == Some(0) {
            at_least_one(c, &tp.key("max_iterations"));
        }
        all_known &= from && to;
        if from && to {
            let f = ids.iter().position(|x| *x == t.from).unwrap_or(0);
            let to = ids.iter().position(|x| *x == t.to).unwrap_or(0);
            let always = t.when.as_ref().is_none_or(|c| c.0 == ConditionForm::Always);
            edges.push((f, to, always, i));
        }
    }
    all_known &= check_switches(c, base, g, &ids, &mut edges);
    check_mixed(c, base, g, &ids, &edges);
    if all_known && ids.len() == g.nodes.len() {
        check_reachable(c, base, g, &ids, &edges);
        check_joins(c, base, g, &ids, &edges);
    }
    if !w.has_stop() && g.max_supersteps.is_none() {
        check_exits(c, base, &ids, &edges);
    }
    ids
}

/// The nodes: known agents (or remote references), unique ids, retries
/// that can happen. Gives the ids.
fn check_nodes(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    g: &GraphSpec,
) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    if g.nodes.is_empty() {
        c.value_error(
            &base.key("nodes"),
            "a graph with no nodes",
            Some("at least one node".into()),
        );
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let np = base.key("nodes").index(i);
        // The long form names the agent under `agent:`.
        let vp = if c.is_mapping(&np) {
            np.key("agent")
        } else {
            np.clone()
        };
        if let Some(plain) = plain_or_remote(c, spec, &vp, &n.0.agent)
            && !names.participant(plain)
        {
            c.value_error(
                &vp,
                format!("unknown agent `{}`", n.0.agent),
                expected_names(names.participants()),
            );
        }
        if let Some(r) = &n.0.retry {
            check_retry(c, &np.key("retry"), r);
        }
        let id = n.id().to_string();
        if ids.contains(&id) {
            c.value_error(
                &np,
                format!("two nodes are named `{id}`"),
                Some("a unique `id:` for each node".into()),
            );
        } else {
            ids.push(id);
        }
    }
    ids
}

/// A node mixing unconditional and conditional transitions leaves open
/// whether the unconditional one is a default or a fan-out.
fn check_mixed(
    c: &mut Checker<'_>,
    base: &FieldPath,
    g: &GraphSpec,
    ids: &[String],
    edges: &[Edge],
) {
    for (node, name) in ids.iter().enumerate() {
        // A switch node's transitions are refused at the switch.
        if g.nodes
            .iter()
            .any(|n| n.id() == name && n.0.switch.is_some())
        {
            continue;
        }
        let out: Vec<&Edge> = edges.iter().filter(|e| e.0 == node).collect();
        if out.iter().any(|e| !e.2)
            && let Some(e) = out.iter().find(|e| e.2)
            && !explicit_always_beside_conditions(c, base, g, ids, edges, e)
        {
            c.error(
                &base.key("transitions").index(e.3),
                format!("node `{name}` has both unconditional and conditional transitions"),
                Some(
                    "`when: otherwise` for a default branch, or a condition on every transition"
                        .into(),
                ),
            );
        }
    }
}

/// Without a stop condition or a superstep cap, a loop of unconditional
/// transitions never ends.
fn check_exits(c: &mut Checker<'_>, base: &FieldPath, ids: &[String], edges: &[Edge]) {
    for cycle in endless_cycles(ids.len(), edges) {
        let first = edges
            .iter()
            .filter(|e| cycle.contains(&e.0) && cycle.contains(&e.1))
            .map(|e| e.3)
            .min()
            .unwrap_or(0);
        let members: Vec<&str> = cycle.iter().map(|&i| ids[i].as_str()).collect();
        c.error(
            &base.key("transitions").index(first),
            format!(
                "a loop with no exit: {} only has unconditional transitions",
                members.join(" -> ")
            ),
            Some("a `when:` condition on a transition of the loop, or a `stop:` condition".into()),
        );
    }
}
