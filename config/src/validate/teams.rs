//! The preset teams: known participants, a stop condition where the team
//! would loop for ever, a selector model that can pick, a swarm that can
//! hand off, a map-reduce whose workers can be placed.

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::humans;
use super::participants::{check_participants, ids, plain_or_remote, uses_step_templates};
use crate::refs::ref_id;
use crate::schema::{ConfigFile, MapReduceSpec, PlacementSpec, WorkflowSpec};
use crate::tree::FieldPath;

/// Checks the preset kinds workflow `w` at `base` names; each one checked
/// sets `participants` to its participants' ids.
pub(super) fn check_teams(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    w: &WorkflowSpec,
    participants: &mut Vec<String>,
) {
    if let Some(t) = &w.round_robin {
        let path = base.key("round_robin").key("participants");
        check_participants(c, names, spec, &path, &t.participants);
        *participants = ids(&t.participants);
        if !w.has_stop() {
            c.error(
                &base.key("round_robin"),
                "a loop with no exit: a round-robin team takes turns until a stop condition holds",
                Some("`stop:` or `max_turns:` on the workflow".into()),
            );
        }
    }
    if let Some(s) = &w.selector {
        let path = base.key("selector");
        check_participants(c, names, spec, &path.key("participants"), &s.participants);
        *participants = ids(&s.participants);
        if !names.model(&s.model) {
            c.value_error(
                &path.key("model"),
                format!("unknown model `{}`", s.model),
                names.expected_models(),
            );
        } else if let Some(m) = spec.models.get(&s.model)
            && !m.provider.is_server()
            && m.replies.is_none()
        {
            c.error(
                &path.key("model"),
                format!(
                    "the selector's model `{}` runs scripted but has no `replies`",
                    s.model
                ),
                Some(format!(
                    "`replies:` on model `{}` naming the speakers in turn",
                    s.model
                )),
            );
        }
        if !w.has_stop() {
            c.error(
                &path,
                "a loop with no exit: a selector team picks speakers until a stop condition holds",
                Some("`stop:` or `max_turns:` on the workflow".into()),
            );
        }
    }
    if let Some(t) = &w.swarm {
        let path = base.key("swarm").key("participants");
        check_participants(c, names, spec, &path, &t.participants);
        humans::check_swarm(c, spec, &path, &t.participants);
        *participants = ids(&t.participants);
        if let Some(first) = t.participants.first().map(|f| ref_id(f))
            && let Some(agent) = spec.agents.get(first)
            && agent.handoffs.is_empty()
            && agent.user.is_none()
        {
            c.value_error(
                &path.index(0),
                format!("the first agent of a swarm must be able to hand off, and `{first}` has no `handoffs`"),
                Some(format!("`handoffs:` on agent `{first}`")),
            );
        }
    }
    if let Some(s) = &w.sequential {
        let path = base.key("sequential").key("participants");
        check_participants(c, names, spec, &path, &s.participants);
        *participants = ids(&s.participants);
    }
    if let Some(m) = &w.map_reduce {
        check_map_reduce(c, names, spec, &base.key("map_reduce"), m);
        *participants = ids(&[m.mapper.clone(), m.reducer.clone()]);
    }
    if let Some(m) = &w.magentic {
        super::magentic::check_magentic(c, names, spec, &base.key("magentic"), m);
        *participants = ids(&m.participants);
    }
}

fn check_map_reduce(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    path: &FieldPath,
    m: &MapReduceSpec,
) {
    for (field, name) in [
        ("mapper", &m.mapper),
        ("worker", &m.worker),
        ("reducer", &m.reducer),
    ] {
        if let Some(plain) = plain_or_remote(c, spec, &path.key(field), name)
            && !names.participant(plain)
        {
            c.value_error(
                &path.key(field),
                format!("unknown agent `{name}`"),
                expected_names(names.participants()),
            );
        }
    }
    humans::check_worker(c, spec, &path.key("worker"), &m.worker);
    check_placement(c, spec, path, m);
    if m.max_concurrency == Some(0) {
        at_least_one(c, &path.key("max_concurrency"));
    }
}

/// A map-reduce's `placement` and `failover`: spread workers are remote
/// replicas on every node hosting the worker, so the worker cannot be
/// pinned to one node.
fn check_placement(c: &mut Checker<'_>, spec: &ConfigFile, path: &FieldPath, m: &MapReduceSpec) {
    let worker = m.worker.as_str();
    if !PlacementSpec::spreads(m.placement) {
        if m.failover.is_some() {
            c.error(
                &path.key("failover"),
                "`failover` applies to workers spread over cluster nodes",
                Some("`placement: spread` or `placement: least_busy`".into()),
            );
        }
        return;
    }
    let how = match m.placement {
        Some(PlacementSpec::LeastBusy) => "least_busy",
        _ => "spread",
    };
    if worker.contains('@') {
        c.value_error(
            &path.key("worker"),
            format!(
                "`placement: {how}` runs the worker on every node that hosts it, but `{worker}` pins it to one"
            ),
            Some(format!("`{}` alone, or `placement: local`", ref_id(worker))),
        );
    } else if let Some(agent) = spec.agents.get(worker) {
        if let Some(node) = &agent.node {
            c.value_error(
                &path.key("placement"),
                format!(
                    "`placement: {how}` runs agent `{worker}` on every node that hosts it, but its `node: {node}` pins it to one"
                ),
                Some(format!(
                    "no `node:` on agent `{worker}`, or `placement: local`"
                )),
            );
        } else if uses_step_templates(agent) {
            c.value_error(
                &path.key("placement"),
                format!(
                    "`placement: {how}` runs agent `{worker}` on other nodes, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                ),
                Some(format!(
                    "instructions without templates on agent `{worker}`, or `placement: local`"
                )),
            );
        }
    }
}
