//! Conditions of transitions and condition steps: regular expressions
//! that compile, template expressions that name steps defined before.

use std::collections::BTreeSet;

use super::block_index::check_block_indexes;
use super::checker::{Checker, expected_names};
use super::field_paths::check_field_path;
use crate::error::one_of;
use crate::schema::{ConditionForm, ConditionSpec};
use crate::template::Expr;
use crate::tree::FieldPath;

/// Checks a condition; `known` are the ids it may refer to, `all_ids`
/// every id of the workflow (to tell "not yet" from "never").
pub(super) fn check_condition(
    c: &mut Checker<'_>,
    path: &FieldPath,
    cond: &ConditionSpec,
    known: &[String],
    all_ids: &BTreeSet<String>,
) {
    match &cond.0 {
        ConditionForm::Regex(r) => {
            if let Err(e) = regex::Regex::new(r) {
                let detail = e.to_string();
                let last = detail.lines().last().unwrap_or("").trim().to_string();
                c.value_error(
                    &path.key("regex"),
                    format!("invalid regular expression: {last}"),
                    None,
                );
            }
        }
        ConditionForm::Expr(text) => {
            let vp = if c.is_mapping(path) {
                path.key("expr")
            } else {
                path.clone()
            };
            check_expr(c, &vp, text, known, all_ids);
        }
        ConditionForm::Any(list) | ConditionForm::All(list) => {
            let key = if matches!(cond.0, ConditionForm::Any(_)) {
                "any"
            } else {
                "all"
            };
            if list.is_empty() {
                c.value_error(&path.key(key), "an empty list", Some("conditions".into()));
            }
            for (i, sub) in list.iter().enumerate() {
                check_condition(c, &path.key(key).index(i), sub, known, all_ids);
            }
        }
        ConditionForm::Not(sub) => check_condition(c, &path.key("not"), sub, known, all_ids),
        ConditionForm::Type(t) if t.trim().is_empty() => {
            c.value_error(
                &path.key("type"),
                "an empty type",
                Some("a structured output's schema name (its `title`, else `output`), or `text`, `structured`, `tool_calls`, `tool_results`, `handoff`, `stop`".into()),
            );
        }
        ConditionForm::Field(f) if f.path.trim().is_empty() => {
            c.value_error(
                &path.key("field").key("path"),
                "an empty field path",
                Some("a field such as `verdict` or `/verdict`".into()),
            );
        }
        _ => {}
    }
}

/// A template expression at `vp`.
fn check_expr(
    c: &mut Checker<'_>,
    vp: &FieldPath,
    text: &str,
    known: &[String],
    all_ids: &BTreeSet<String>,
) {
    let expr = match Expr::parse(text) {
        Err(e) => return c.value_error(vp, e.message, None),
        Ok(expr) => expr,
    };
    check_block_indexes(c, vp, expr.reference());
    check_field_path(c, vp, expr.reference());
    for step in expr.reference().steps() {
        if known.iter().any(|k| k == step) {
            continue;
        }
        if all_ids.contains(step) {
            c.value_error(
                vp,
                format!("step `{step}` is referenced before it exists"),
                Some(format!(
                    "a step defined before this one: {}",
                    one_of(&known.iter().map(String::as_str).collect::<Vec<_>>())
                )),
            );
        } else {
            c.value_error(
                vp,
                format!("`{}` names no step `{step}`", expr.reference()),
                expected_names(known.iter().map(String::as_str).collect()),
            );
        }
    }
}
