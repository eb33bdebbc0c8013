//! Participants named by a workflow: known agents or workflows, each once,
//! and `agent@node` references that are well formed and can run remotely.

use std::collections::BTreeSet;

use super::checker::{Checker, Defined, expected_names};
use crate::refs::{ref_id, split_ref, valid_name};
use crate::schema::{AgentSpec, ConfigFile};
use crate::template::Template;
use crate::tree::FieldPath;
use troupe_runtime::message::USER;

/// Whether an agent's instructions read the workflow's steps (which only
/// the process running the workflow has).
pub(super) fn uses_step_templates(agent: &AgentSpec) -> bool {
    agent
        .instructions
        .as_deref()
        .and_then(|t| Template::parse(t).ok())
        .is_some_and(|t| t.has_references())
}

/// A participant reference at `path`: a plain name is returned for the
/// caller to look up; `agent@node` (an agent hosted on another node, which
/// this file need not declare) is checked here and gives `None`.
pub(super) fn plain_or_remote<'r>(
    c: &mut Checker<'_>,
    spec: &ConfigFile,
    path: &FieldPath,
    reference: &'r str,
) -> Option<&'r str> {
    if !reference.contains('@') {
        return Some(reference);
    }
    match split_ref(reference) {
        Some((agent, Some(node))) if agent != USER && valid_name(agent) && valid_name(node) => {
            if super::humans::is_user_agent(spec, agent) {
                c.value_error(
                    path,
                    format!(
                        "`{reference}` runs agent `{agent}` on node `{node}`, but `{agent}` asks whoever runs the workflow"
                    ),
                    Some(format!("`{agent}` alone")),
                );
            } else if let Some(a) = spec.agents.get(agent)
                && uses_step_templates(a)
            {
                c.value_error(
                    path,
                    format!(
                        "`{reference}` runs agent `{agent}` on node `{node}`, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                    ),
                    Some(format!("`{agent}` alone, or instructions without templates")),
                );
            }
        }
        _ => c.value_error(
            path,
            format!("`{reference}` is not a valid remote reference"),
            Some("`agent@node` (letters, digits, `_` and `-` on both sides)".into()),
        ),
    }
    None
}

/// A list of participants at `path`: not empty, every one known, none
/// twice.
pub(super) fn check_participants(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    path: &FieldPath,
    list: &[String],
) {
    if list.is_empty() {
        c.value_error(
            path,
            "no participants",
            Some("at least one agent or workflow name".into()),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, n) in list.iter().enumerate() {
        let known = match plain_or_remote(c, spec, &path.index(i), n) {
            Some(plain) => names.participant(plain),
            None => true,
        };
        if n == USER {
            c.value_error(
                &path.index(i),
                "`user` is the caller, not a participant",
                Some("an agent with `user: {}` (e.g. `me: {user: {}}`), named here: its turns ask the caller".into()),
            );
        } else if !known {
            c.value_error(
                &path.index(i),
                format!("unknown agent `{n}`"),
                expected_names(names.participants()),
            );
        } else if !seen.insert(ref_id(n)) {
            c.value_error(
                &path.index(i),
                format!("`{}` takes part twice", ref_id(n)),
                Some("each participant once".into()),
            );
        }
    }
}

/// The participant ids of references (without `@node`).
pub(super) fn ids(list: &[String]) -> Vec<String> {
    list.iter().map(|n| ref_id(n).to_string()).collect()
}
