//! A workflow section: one kind (a router may go with a graph), options
//! that apply to that kind, then the kind's own checks and the shared
//! threads of its participants.

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::graph::check_graph;
use super::merge_cache::check_merges_and_caches;
use super::plan::check_plan;
use super::reasoner::check_reasoner;
use super::router::check_router;
use super::steps::check_steps;
use super::stop::check_stop;
use super::stop_sources::check_stop_sources;
use super::teams::check_teams;
use crate::schema::{ConfigFile, WorkflowSpec};
use crate::tree::FieldPath;

const KINDS: &str = "one of `round_robin`, `selector`, `swarm`, `sequential`, `map_reduce`, `magentic`, `graph`, `steps`, `plan`, `reasoner`, `router`";

/// Checks the workflow `w` at `base`.
pub(super) fn check_workflow(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    w: &WorkflowSpec,
) {
    check_kind(c, base, w);
    if w.max_loop_iterations == Some(0) {
        at_least_one(c, &base.key("max_loop_iterations"));
    }
    if w.max_turns.and_then(|t| t.turns()) == Some(0) {
        at_least_one(c, &base.key("max_turns"));
    }
    if w.max_concurrency == Some(0) {
        at_least_one(c, &base.key("max_concurrency"));
    }
    if w.max_history == Some(0) {
        at_least_one(c, &base.key("max_history"));
    }
    if let Some(stop) = &w.stop {
        check_stop(c, &base.key("stop"), stop);
        check_stop_sources(c, names, &base.key("stop"), stop);
    }

    let mut participants: Vec<String> = Vec::new();
    check_teams(c, names, spec, base, w, &mut participants);
    if let Some(g) = &w.graph {
        participants = check_graph(c, names, spec, &base.key("graph"), g, w);
    }
    if let Some(steps) = &w.steps {
        participants = check_steps(c, names, spec, &base.key("steps"), w, steps);
    }
    if let Some(plan) = &w.plan {
        participants = check_plan(c, names, spec, &base.key("plan"), plan);
        for field in ["shared_threads", "max_loop_iterations"] {
            let given = match field {
                "shared_threads" => !w.shared_threads.is_empty(),
                _ => w.max_loop_iterations.is_some(),
            };
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` does not apply to a plan"),
                    Some("a `graph`, `steps` or `router` workflow".into()),
                );
            }
        }
    }
    if let Some(r) = &w.reasoner {
        participants = check_reasoner(c, names, &base.key("reasoner"), &spec.agents, r);
        for field in ["shared_threads", "max_loop_iterations"] {
            let given = match field {
                "shared_threads" => !w.shared_threads.is_empty(),
                _ => w.max_loop_iterations.is_some(),
            };
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` does not apply to a reasoner"),
                    Some("a `graph`, `steps` or `router` workflow".into()),
                );
            }
        }
    }
    check_merges_and_caches(c, base, w, &participants);
    if let Some(r) = &w.router {
        check_router(c, names, spec, base, w, r, &mut participants);
    }
    if let Some(answer) = &w.answer {
        check_answer(c, names, &base.key("answer"), &answer.0, &participants);
    }
    for (group, members) in &w.shared_threads {
        let gp = base.key("shared_threads").key(group.clone());
        for (i, m) in members.iter().enumerate() {
            if !participants.contains(m) && !names.broken.contains(m) {
                c.value_error(
                    &gp.index(i),
                    format!("`{m}` is not a participant of this workflow"),
                    expected_names(participants.iter().map(String::as_str).collect()),
                );
            }
        }
    }
}

/// Every answering agent at `at` is a participant of the workflow.
fn check_answer(
    c: &mut Checker<'_>,
    names: &Defined,
    at: &FieldPath,
    answer: &[String],
    participants: &[String],
) {
    if answer.is_empty() {
        c.value_error(
            at,
            "no answering agent",
            expected_names(participants.iter().map(String::as_str).collect()),
        );
    }
    for (i, a) in answer.iter().enumerate() {
        if participants.contains(a) || names.broken.contains(a) {
            continue;
        }
        let fp = if answer.len() == 1 {
            at.clone()
        } else {
            at.index(i)
        };
        c.value_error(
            &fp,
            format!("`{a}` is not a participant of this workflow"),
            expected_names(participants.iter().map(String::as_str).collect()),
        );
    }
}

/// One kind, a router only alone or with a graph, and no option a preset
/// has nowhere to put.
fn check_kind(c: &mut Checker<'_>, base: &FieldPath, w: &WorkflowSpec) {
    let found = w.kinds();
    match found.as_slice() {
        // A kind dropped for an error of its own (`magentic:` without
        // `model`) was given: that error says what is wrong.
        [] if w.router.is_none() && !kind_dropped(c, base) => {
            c.error(base, "a workflow needs a kind", Some(KINDS.into()))
        }
        [] | [_] => {}
        [_, second, ..] => c.error(
            &base.key(*second),
            format!(
                "a workflow has one kind; `{}` and `{second}` are both given",
                found[0]
            ),
            Some("one of them (a `router` may go with a `graph`)".into()),
        ),
    }
    if w.router.is_some() && !found.is_empty() && !found.contains(&"graph") {
        c.error(
            &base.key("router"),
            format!(
                "a `router` goes alone or with a `graph`, not with `{}`",
                found[0]
            ),
            None,
        );
    }
    // Presets build their own workflow: these options have nowhere to go.
    if w.is_preset() {
        for (field, given) in [
            ("shared_threads", !w.shared_threads.is_empty()),
            ("max_concurrency", w.max_concurrency.is_some()),
            ("max_loop_iterations", w.max_loop_iterations.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` does not apply to a preset team"),
                    Some("a `graph`, `steps` or `router` workflow".into()),
                );
            }
        }
    }
}

/// Whether a kind written in the workflow at `base` was dropped for an
/// error already reported.
fn kind_dropped(c: &Checker<'_>, base: &FieldPath) -> bool {
    [
        "round_robin",
        "selector",
        "swarm",
        "sequential",
        "map_reduce",
        "magentic",
        "graph",
        "steps",
        "plan",
        "reasoner",
        "router",
        "file",
    ]
    .iter()
    .any(|k| c.was_removed(&base.key(*k)))
}
