//! `agents:` entries: a valid, unreserved name, a known model with a
//! script when it runs offline (or `user:`, the caller, or `a2a:`, a
//! remote agent), handoffs to known
//! participants, templates that name known steps, a node the templates
//! can run on.

use std::collections::BTreeSet;

use super::a2a::check_a2a_agent;
use super::block_index::check_block_indexes;
use super::checker::{Checker, Defined, at_least_one, expected_names, p};
use super::field_paths::check_field_path;
use super::humans::check_user_agent;
use super::models::check_temperature;
use super::participants::uses_step_templates;
use super::tools::{check_script, check_tools};
use crate::refs::valid_name;
use crate::schema::{AgentSpec, ConfigFile, Provider};
use crate::template::Template;
use crate::tree::FieldPath;
use troupe_runtime::message::USER;

/// Checks agent `name`; `ids` are the ids its templates may name.
pub(super) fn check_agent(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    ids: &BTreeSet<String>,
    name: &str,
    agent: &AgentSpec,
) {
    let base = p(&["agents", name]);
    if name == USER {
        c.error(
            &base,
            "`user` is reserved for the caller",
            Some("another agent name".into()),
        );
    }
    if !valid_name(name) {
        c.error(
            &base,
            format!("`{name}` is not a valid agent name"),
            Some("letters, digits, `_` and `-`".into()),
        );
    }
    if names.workflows.contains(name) {
        c.error(
            &base,
            format!("`{name}` names both an agent and a workflow"),
            Some("distinct names".into()),
        );
    }
    if let Some(a2a) = &agent.a2a {
        check_a2a_agent(c, &base, agent, a2a);
        return;
    }
    if agent.user.is_some() {
        check_user_agent(c, &base, agent);
        return;
    }
    match agent.model.as_deref() {
        None => c.error(
            &base.key("model"),
            "missing field `model`",
            Some("`model:` naming a model, `user: {}` for an agent the caller answers, or `a2a: {url: …}` for a remote agent".into()),
        ),
        Some(model) => check_agent_model(c, names, spec, &base, name, agent, model),
    }
    check_tools(c, &base, &agent.tools);
    if let Some(context) = &agent.context {
        super::context::check_context(c, &base.key("context"), context);
    }
    if let Some(script) = &agent.script {
        if script.is_empty() {
            c.value_error(
                &base.key("script"),
                "an empty script answers nothing",
                Some("at least one reply (or no `script:`, to use the model's `replies`)".into()),
            );
        }
        check_script(c, &base.key("script"), script, Some(&agent.tools));
    }
    for (i, target) in agent.handoffs.iter().enumerate() {
        let path = base.key("handoffs").index(i);
        if target == name {
            c.value_error(&path, "an agent cannot hand off to itself", None);
        } else if target != USER && !names.participant(target) {
            let mut known = names.participants();
            known.push(USER);
            c.value_error(
                &path,
                format!("unknown handoff target `{target}`"),
                expected_names(known),
            );
        }
    }
    if agent.max_tool_iterations == Some(0) {
        at_least_one(c, &base.key("max_tool_iterations"));
    }
    if let Some(schema) = &agent.structured_output {
        let path = base.key("structured_output");
        let expected = || Some("a JSON Schema such as `{type: object, properties: …}`".into());
        if !schema.is_object() {
            c.value_error(
                &path,
                "a structured output schema must be a mapping",
                expected(),
            );
        } else if let Err(e) = troupe_agents::StructuredOutput::new(schema.clone()) {
            // The run would refuse it when building the agent.
            c.value_error(&path, format!("not a valid JSON Schema: {e}"), expected());
        }
    }
    if let Some(t) = agent.temperature {
        check_temperature(c, &base.key("temperature"), t);
    }
    if let Some(node) = &agent.node {
        let path = base.key("node");
        if !valid_name(node) {
            c.value_error(
                &path,
                format!("`{node}` is not a valid node name"),
                Some("letters, digits, `_` and `-`".into()),
            );
        } else if uses_step_templates(agent) {
            c.value_error(
                &path,
                format!(
                    "agent `{name}` runs on node `{node}`, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                ),
                Some("instructions without `{{ $steps… }}`, or no `node:`".into()),
            );
        }
    }
    if let Some(text) = &agent.instructions {
        let path = base.key("instructions");
        match Template::parse(text) {
            Err(e) => c.value_error(&path, e.message, None),
            Ok(t) => {
                for r in t.references() {
                    check_block_indexes(c, &path, r);
                    check_field_path(c, &path, r);
                    for step in r.steps() {
                        if !ids.contains(step) {
                            c.value_error(
                                &path,
                                format!("`{r}` names no step, node or participant `{step}`"),
                                expected_names(ids.iter().map(String::as_str).collect()),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Agent `name`'s `model`: known, and scripted only with replies.
fn check_agent_model(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    name: &str,
    agent: &AgentSpec,
    model_name: &str,
) {
    match spec.models.get(model_name) {
        None if !names.broken.contains(model_name) => c.value_error(
            &base.key("model"),
            format!("unknown model `{model_name}`"),
            names.expected_models(),
        ),
        None => {}
        Some(model)
            if !model.provider.is_server() && agent.script.is_none() && model.replies.is_none() =>
        {
            c.error(
                base,
                format!(
                    "agent `{name}` has no scripted replies, but model `{model_name}` runs scripted{}",
                    if model.provider == Provider::Auto {
                        " offline"
                    } else {
                        ""
                    }
                ),
                Some(format!(
                    "`script:` on the agent, or `replies:` on model `{model_name}`"
                )),
            );
        }
        Some(_) => {}
    }
}
