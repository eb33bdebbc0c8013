//! The caller in the conversation: `user:` agents take nothing a model
//! would need, and stand only where a turn can wait for the caller's
//! answer — not as a map-reduce's worker (one question per sub-task, all
//! at once), not in a swarm (which moves on only by handoffs), not on
//! another node.

use super::checker::Checker;
use crate::schema::UserAnswerer;
use crate::schema::{AgentSpec, ConfigFile};
use crate::tree::FieldPath;

/// Whether agent `name` is answered by the caller.
pub(super) fn is_user_agent(spec: &ConfigFile, name: &str) -> bool {
    spec.agents.get(name).is_some_and(|a| a.user.is_some())
}

/// Checks a `user:` agent at `base`: only `description` goes with it, and
/// its `form`, if any, is a schema of an object with properties.
pub(super) fn check_user_agent(c: &mut Checker<'_>, base: &FieldPath, agent: &AgentSpec) {
    if let Some(u) = &agent.user {
        let by = u.answered_by.unwrap_or(UserAnswerer::Person);
        if u.form.is_some() && by != UserAnswerer::Person {
            c.error(
                &base.key("user").key("form"),
                "a form is filled by a person: it goes with `answered_by: person`",
                None,
            );
        }
        if u.max_tokens.is_some() && by != UserAnswerer::ClientModel {
            c.error(
                &base.key("user").key("max_tokens"),
                "`max_tokens` bounds the client's model: it goes with `answered_by: client_model`",
                None,
            );
        }
    }
    if let Some(form) = agent.user.as_ref().and_then(|u| u.form.as_ref()) {
        let props = form
            .get("properties")
            .and_then(serde_json::Value::as_object);
        let object = form
            .get("type")
            .is_none_or(|t| t == &serde_json::Value::from("object"));
        if !object || props.is_none_or(serde_json::Map::is_empty) {
            c.value_error(
                &base.key("user").key("form"),
                "a form is a JSON Schema of an object with at least one property",
                Some("`{type: object, properties: {name: {type: string}}}`".into()),
            );
        }
    }
    let given = [
        ("model", agent.model.is_some()),
        ("instructions", agent.instructions.is_some()),
        ("tools", !agent.tools.is_empty()),
        ("handoffs", !agent.handoffs.is_empty()),
        ("max_tool_iterations", agent.max_tool_iterations.is_some()),
        ("structured_output", agent.structured_output.is_some()),
        ("temperature", agent.temperature.is_some()),
        ("max_tokens", agent.max_tokens.is_some()),
        ("tool_timeout", agent.tool_timeout.is_some()),
        ("script", agent.script.is_some()),
    ];
    for (field, _) in given.iter().filter(|(_, given)| *given) {
        c.error(
            &base.key(*field),
            format!("a `user` agent is answered by the caller, not a model: it takes no `{field}`"),
            Some("`user:` with only `description` beside it".into()),
        );
    }
    if let Some(node) = &agent.node {
        c.error(
            &base.key("node"),
            format!(
                "a `user` agent asks whoever runs the workflow, so it cannot run on node `{node}`"
            ),
            Some("no `node:`".into()),
        );
    }
}

/// A map-reduce's `worker` at `path` that is a `user` agent.
pub(super) fn check_worker(c: &mut Checker<'_>, spec: &ConfigFile, path: &FieldPath, worker: &str) {
    if is_user_agent(spec, worker) {
        c.value_error(
            path,
            format!(
                "`{worker}` is answered by the caller, but a map-reduce's worker runs once per sub-task, all at once"
            ),
            Some("an agent with a model as the worker (the caller may be the mapper or the reducer)".into()),
        );
    }
}

/// The participants of a swarm at `path`: none may be a `user` agent.
pub(super) fn check_swarm(
    c: &mut Checker<'_>,
    spec: &ConfigFile,
    path: &FieldPath,
    list: &[String],
) {
    for (i, name) in list.iter().enumerate() {
        if is_user_agent(spec, name) {
            c.value_error(
                &path.index(i),
                format!(
                    "`{name}` is answered by the caller, but a swarm moves on only by handoffs, which the caller cannot make"
                ),
                Some("`handoffs: [user]` on the agents that should ask the caller (the run ends there, and running again with the caller's reply resumes with that agent)".into()),
            );
        }
    }
}
