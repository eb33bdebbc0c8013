//! A workflow's `reasoner:`: a known agent with a model, known actions
//! (agents, workflows, built-in tools) and summarizer, limits of at least
//! 1, branch scripts whose paths are action ids.

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::tools::{check_script, check_tools};
use crate::builtin::BUILTIN_TOOLS;
use crate::schema::{ReasonerSpec, ToolSpec};
use crate::tree::FieldPath;

/// Checks the reasoner at `base`; returns the participants it runs.
pub(super) fn check_reasoner(
    c: &mut Checker<'_>,
    names: &Defined,
    base: &FieldPath,
    agents: &std::collections::BTreeMap<String, crate::schema::AgentSpec>,
    r: &ReasonerSpec,
) -> Vec<String> {
    let mut used = vec![r.agent.clone()];
    match agents.get(&r.agent) {
        None if !names.broken.contains(&r.agent) => c.value_error(
            &base.key("agent"),
            format!("unknown agent `{}`", r.agent),
            expected_names(agents.keys().map(String::as_str).collect()),
        ),
        Some(a) if a.model.is_none() => c.value_error(
            &base.key("agent"),
            format!(
                "agent `{}` has no `model`: a reasoner's turns are a model's",
                r.agent
            ),
            Some("an agent with a `model`".into()),
        ),
        _ => {}
    }
    let tool_names: Vec<&str> = r
        .tools
        .iter()
        .filter_map(|t| match t {
            ToolSpec::Builtin(b, _) => Some(b.name()),
            _ => None,
        })
        .collect();
    for (i, a) in r.actions.iter().enumerate() {
        if BUILTIN_TOOLS.contains(&a.as_str()) {
            if tool_names.contains(&a.as_str()) {
                c.value_error(
                    &base.key("actions").index(i),
                    format!("`{a}` is an action twice: here and in `tools`"),
                    Some("one of them".into()),
                );
            }
            continue;
        }
        if a == &r.agent {
            c.value_error(
                &base.key("actions").index(i),
                format!("`{a}` is the reasoner itself"),
                Some("another agent, a workflow or a tool".into()),
            );
        } else if names.participant(a) {
            used.push(a.clone());
        } else {
            let mut all = names.participants();
            all.extend(BUILTIN_TOOLS.iter().copied());
            c.value_error(
                &base.key("actions").index(i),
                format!("unknown action `{a}`"),
                expected_names(all),
            );
        }
    }
    if r.actions.is_empty() && r.tools.is_empty() {
        c.error(
            base,
            "a reasoner needs actions to run",
            Some("`actions: [agent, workflow or built-in tool…]` or `tools: […]`".into()),
        );
    }
    check_tools(c, &base.key("tools"), &r.tools);
    if let Some(s) = &r.summarizer {
        if names.participant(s) {
            used.push(s.clone());
        } else {
            c.value_error(
                &base.key("summarizer"),
                format!("unknown agent `{s}`"),
                expected_names(names.participants()),
            );
        }
    }
    if r.max_depth == Some(0) {
        at_least_one(c, &base.key("max_depth"));
    }
    if r.max_iterations == Some(0) {
        at_least_one(c, &base.key("max_iterations"));
    }
    for (path, script) in &r.branch_scripts {
        let at = base.key("branch_scripts").key(path.clone());
        let depth = path.split('/').count();
        if path
            .split('/')
            .any(|id| id.trim().is_empty() || id.contains(' '))
        {
            c.error(
                &at,
                format!("`{path}` is not a branch path"),
                Some("action ids joined by `/`, such as `B` or `D/X`".into()),
            );
        } else if depth as u32 > r.max_depth.unwrap_or(2) {
            c.error(
                &at,
                format!(
                    "branch `{path}` is {depth} levels down, deeper than `max_depth` ({})",
                    r.max_depth.unwrap_or(2)
                ),
                Some(format!(
                    "a path of at most {} ids",
                    r.max_depth.unwrap_or(2)
                )),
            );
        }
        check_script(c, &at, script, None);
    }
    used
}
