//! A workflow's `plan:`: one form (a text plan, action groups or a
//! planner); a text plan that parses, located at the line and column
//! inside the plan text; every id a step or a known agent; a planner with
//! a known model and agents.

use std::collections::BTreeSet;

use troupe_planning::{PlanError, PlanGraph};
use troupe_runtime::message::USER;

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::participants::check_participants;
use super::plan_text::{PlanText, column_of_id, column_of_position, first_column};
use crate::schema::{ConfigFile, PlanSectionSpec};
use crate::tree::FieldPath;

/// Checks the plan at `base`; returns the participants it runs.
pub(super) fn check_plan(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    plan: &PlanSectionSpec,
) -> Vec<String> {
    let forms = plan.forms();
    match forms.as_slice() {
        [] => c.error(
            base,
            "a plan needs its form",
            Some("one of `text`, `groups`, `planner`".into()),
        ),
        [_] => {}
        [first, second, ..] => c.error(
            &base.key(*second),
            format!("a plan has one form; `{first}` and `{second}` are both given"),
            Some("one of them".into()),
        ),
    }
    let known = |id: &str| plan.steps.contains_key(id) || names.participant(id);
    let expected = || {
        let mut all: Vec<&str> = plan.steps.keys().map(String::as_str).collect();
        all.extend(names.participants());
        expected_names(all)
    };
    for (id, step) in &plan.steps {
        let path = base.key("steps").key(id.clone());
        if id == USER || id.contains(['/', ',']) || id.contains("->") || id.contains(' ') {
            c.error(
                &path,
                format!("`{id}` is not a valid step id"),
                Some("no spaces, `/`, `,` or `->`; not `user`".into()),
            );
        }
        if !names.participant(&step.agent) {
            c.value_error(
                &path.key("agent"),
                format!("unknown agent `{}`", step.agent),
                expected_names(names.participants()),
            );
        }
    }
    let mut used: Vec<String> = Vec::new();
    if let Some(text) = &plan.text {
        let path = base.key("text");
        let layout = PlanText::of(c, &path);
        let lines: Vec<&str> = text.lines().collect();
        let line_text = |line: usize| lines.get(line.wrapping_sub(1)).copied().unwrap_or("");
        match PlanGraph::parse(text) {
            Err(e) => {
                let at = match e.line() {
                    Some(line) => {
                        let t = line_text(line);
                        let column = match &e {
                            PlanError::EmptyStep { position, .. } => {
                                column_of_position(t, *position)
                            }
                            PlanError::InvalidId { id, .. }
                            | PlanError::ReservedId { id, .. }
                            | PlanError::DuplicateAlternative { id, .. }
                            | PlanError::DuplicateStep { id, .. }
                            | PlanError::UnknownStep { id, .. } => column_of_id(t, id),
                            PlanError::DuplicateEdge { from, .. } => column_of_id(t, from),
                            _ => first_column(t),
                        };
                        layout.position(line, column)
                    }
                    None => c.value_start(&path),
                };
                c.error_at(at, &path, format!("the plan text: {e}"), None);
            }
            Ok(graph) => {
                for id in graph.ids() {
                    if !known(id) {
                        let line = graph.line_of(id).unwrap_or(1);
                        let at = layout.position(line, column_of_id(line_text(line), id));
                        c.error_at(
                            at,
                            &path,
                            format!(
                                "the plan text: line {line}: `{id}` is neither a step of `steps` nor an agent"
                            ),
                            expected(),
                        );
                    }
                    used.push(id.clone());
                }
            }
        }
    }
    if let Some(groups) = &plan.groups {
        let path = base.key("groups");
        if groups.is_empty() {
            c.value_error(&path, "no action groups", Some("at least one group".into()));
        }
        let mut seen = BTreeSet::new();
        for (g, group) in groups.iter().enumerate() {
            if group.is_empty() {
                c.value_error(
                    &path.index(g),
                    format!("action group {} is empty", g + 1),
                    Some("at least one step".into()),
                );
            }
            for (i, id) in group.iter().enumerate() {
                let at = path.index(g).index(i);
                if !known(id) {
                    c.value_error(
                        &at,
                        format!("`{id}` is neither a step of `steps` nor an agent"),
                        expected(),
                    );
                } else if !seen.insert(id.as_str()) {
                    c.value_error(
                        &at,
                        format!("`{id}` is in the plan twice"),
                        Some(
                            "each step once (give a step of the same agent another id in `steps`)"
                                .into(),
                        ),
                    );
                }
                used.push(id.clone());
            }
        }
    }
    if let Some(summarizer) = &plan.summarizer {
        let path = base.key("summarizer");
        if plan.groups.is_none() {
            c.error(
                &path,
                "`summarizer` merges action groups; this plan has none",
                Some("`groups: […]`, or no `summarizer`".into()),
            );
        } else if !names.participant(summarizer) {
            c.value_error(
                &path,
                format!("unknown agent `{summarizer}`"),
                expected_names(names.participants()),
            );
        }
    }
    if let Some(planner) = &plan.planner {
        let path = base.key("planner");
        match spec.models.get(&planner.model) {
            None if !names.broken.contains(&planner.model) => c.value_error(
                &path.key("model"),
                format!("unknown model `{}`", planner.model),
                names.expected_models(),
            ),
            Some(m)
                if !m.provider.is_server() && m.replies.is_none() && planner.script.is_none() =>
            {
                c.error(
                    &path,
                    format!(
                        "the planner has no scripted replies, but model `{}` runs scripted",
                        planner.model
                    ),
                    Some("`script:` on the planner, or `replies:` on the model".into()),
                );
            }
            _ => {}
        }
        check_participants(c, names, spec, &path.key("agents"), &planner.agents);
        if planner.max_attempts == Some(0) {
            at_least_one(c, &path.key("max_attempts"));
        }
        used.extend(planner.agents.iter().cloned());
    }
    if plan.planner.is_some() && !plan.steps.is_empty() {
        c.error(
            &base.key("steps"),
            "a planner writes its own steps",
            Some("`steps` with `text` or `groups`".into()),
        );
    }
    if let Some(crate::schema::PassingMode::Key(key)) = &plan.passing
        && (key.trim().is_empty() || key.contains(['{', '}']))
    {
        c.value_error(
            &base.key("passing").key("key"),
            format!("{key:?} cannot name the key the results are passed under"),
            Some("a name such as `findings` (written `{findings}` in a request)".into()),
        );
    }
    if let Some(flags) = &plan.flags {
        for (field, word) in [("stop", &flags.stop), ("abort", &flags.abort)] {
            if word.as_deref().is_some_and(|w| w.trim().is_empty()) {
                c.value_error(
                    &base.key("flags").key(field),
                    format!("the `{field}` flag is empty: every reply would contain it"),
                    Some("a word a step writes to raise the flag".into()),
                );
            }
        }
    }
    used
}
