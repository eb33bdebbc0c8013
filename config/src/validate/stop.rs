//! `stop:`: a stop condition that can hold — an expression that parses
//! (errors located inside it), or a mapping with something in it.

use troupe_runtime::StopCondition;

use super::checker::Checker;
use crate::error::Position;
use crate::schema::{StopFields, StopForm, StopSpec};
use crate::tree::FieldPath;

/// Every kind an expression may use, for "expected" lists.
const KINDS: &str = "max_messages(N), max_turns(N), token_budget(N), prompt_tokens(N), \
completion_tokens(N), max_cost(USD), max_model_calls(N), max_tool_calls(N), timeout(DURATION), \
text_mention(TEXT [from SOURCE, ...]), text_message[(SOURCE, ...)], source_match(SOURCE, ...), \
handoff(TARGET), stop_message, function_call(TOOL)";

/// Checks the stop condition at `path` and the ones it nests.
pub(super) fn check_stop(c: &mut Checker<'_>, path: &FieldPath, s: &StopSpec) {
    match &s.0 {
        StopForm::Expr(text) => check_expr(c, path, text),
        StopForm::Fields(f) => check_fields(c, path, f),
    }
}

/// Where character `offset` (from 0) of the string value at `path` is
/// written: inside a one-line plain or quoted scalar; else the value.
fn position_in(c: &Checker<'_>, path: &FieldPath, offset: usize) -> Position {
    let start = c.value_start(path);
    let first: String = c
        .source_line(start.line)
        .map(|l| {
            l.chars()
                .skip(start.column.saturating_sub(1) as usize)
                .collect()
        })
        .unwrap_or_default();
    if first.starts_with('|') || first.starts_with('>') {
        return start;
    }
    let quote = u32::from(first.starts_with('"') || first.starts_with('\''));
    let offset = u32::try_from(offset).unwrap_or(u32::MAX);
    Position::new(start.line, start.column + quote + offset)
}

fn check_expr(c: &mut Checker<'_>, path: &FieldPath, text: &str) {
    match StopCondition::parse(text) {
        Err(e) => {
            let at = position_in(c, path, e.offset);
            c.error_at(
                at,
                path,
                format!("stop expression: {}", e.message),
                Some(KINDS.into()),
            );
        }
        Ok(cond) => {
            if let Some(i) = external_at(text, &cond) {
                let at = position_in(c, path, i);
                c.error_at(
                    at,
                    path,
                    "`external` has no handle in a config: `troupe run` already stops gracefully on Ctrl-C or SIGTERM (the caller's external stop)",
                    Some(format!("a condition a run can meet: {KINDS}")),
                );
            }
        }
    }
}

/// Where `external` is written, if the condition uses it.
fn external_at(text: &str, cond: &StopCondition) -> Option<usize> {
    if !cond
        .to_string()
        .split([' ', '(', ')'])
        .any(|w| w == "external")
    {
        return None;
    }
    let i = text.match_indices("external").map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back();
        !before.is_some_and(|b| b.is_alphanumeric() || b == '_')
    })?;
    Some(text[..i].chars().count())
}

fn check_fields(c: &mut Checker<'_>, path: &FieldPath, s: &StopFields) {
    let given = s.max_messages.is_some()
        || s.max_turns.is_some()
        || s.text_mention.is_some()
        || s.source_match.is_some()
        || s.text_message.is_some()
        || s.handoff.is_some()
        || s.stop_message.is_some()
        || s.function_call.is_some()
        || s.token_budget.is_some()
        || s.prompt_tokens.is_some()
        || s.completion_tokens.is_some()
        || s.max_cost.is_some()
        || s.max_model_calls.is_some()
        || s.max_tool_calls.is_some()
        || s.timeout.is_some()
        || s.all.is_some()
        || s.any.is_some();
    if !given && !c.lost_part(path) {
        c.error(
            path,
            "an empty stop condition never holds",
            Some("one of `max_messages`, `max_turns`, `text_mention`, `source_match`, `text_message`, `handoff`, `stop_message`, `function_call`, `token_budget`, `prompt_tokens`, `completion_tokens`, `max_cost`, `max_model_calls`, `max_tool_calls`, `timeout`, `all`, `any`".into()),
        );
    }
    // A count of 0 holds before the first turn: the run would do nothing.
    for (field, n) in [
        ("max_messages", s.max_messages),
        ("max_turns", s.max_turns),
        ("token_budget", s.token_budget),
        ("prompt_tokens", s.prompt_tokens),
        ("completion_tokens", s.completion_tokens),
        ("max_model_calls", s.max_model_calls),
        ("max_tool_calls", s.max_tool_calls),
    ] {
        if n == Some(0) {
            c.value_error(
                &path.key(field),
                format!("`{field}: 0` stops the run before it starts"),
                Some("a number of at least 1".into()),
            );
        }
    }
    if let Some(usd) = s.max_cost
        && !(usd.is_finite() && usd > 0.0)
    {
        c.value_error(
            &path.key("max_cost"),
            format!("`max_cost: {usd}` is not an amount in USD above 0"),
            Some("an amount such as `0.50`".into()),
        );
    }
    if s.stop_message == Some(false) {
        c.value_error(
            &path.key("stop_message"),
            "`stop_message: false` never holds",
            Some("`stop_message: true` (or no `stop_message`)".into()),
        );
    }
    for (field, list) in [
        ("source_match", &s.source_match),
        ("text_message", &s.text_message),
    ] {
        if list.as_ref().is_some_and(Vec::is_empty) {
            c.value_error(
                &path.key(field),
                "an empty list never holds",
                Some("the agents whose messages count".into()),
            );
        }
    }
    for (field, list) in [("all", &s.all), ("any", &s.any)] {
        if let Some(list) = list {
            if list.is_empty() {
                c.value_error(
                    &path.key(field),
                    "an empty list",
                    Some("stop conditions".into()),
                );
            }
            for (i, sub) in list.iter().enumerate() {
                check_stop(c, &path.key(field).index(i), sub);
            }
        }
    }
}
