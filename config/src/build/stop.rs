//! A `stop` section (and `max_turns`) as the runtime's [`StopCondition`].

use troupe_runtime::StopCondition;

use crate::schema::{StopFields, StopForm, StopSpec};

/// The stop condition a `stop` section (and `max_turns`) describe. An
/// expression that does not parse was reported by validation; here it
/// adds nothing.
pub(super) fn stop_condition(
    spec: Option<&StopSpec>,
    max_turns: Option<u64>,
) -> Option<StopCondition> {
    let mut any: Vec<StopCondition> = spec.map(stop_parts).unwrap_or_default();
    if let Some(n) = max_turns {
        any.push(StopCondition::max_turns(n));
    }
    match any.len() {
        0 => None,
        1 => any.pop(),
        _ => Some(StopCondition::Any(any)),
    }
}

fn stop_parts(s: &StopSpec) -> Vec<StopCondition> {
    match &s.0 {
        StopForm::Expr(text) => StopCondition::parse(text).ok().into_iter().collect(),
        StopForm::Fields(f) => field_parts(f),
    }
}

fn field_parts(s: &StopFields) -> Vec<StopCondition> {
    let mut v = Vec::new();
    if let Some(n) = s.max_messages {
        v.push(StopCondition::max_messages(n));
    }
    if let Some(n) = s.max_turns {
        v.push(StopCondition::max_turns(n));
    }
    if let Some(t) = &s.text_mention {
        v.push(StopCondition::text_mention(t.clone()));
    }
    if let Some(list) = &s.source_match {
        v.push(StopCondition::source_match(list.clone()));
    }
    if let Some(list) = &s.text_message {
        v.push(StopCondition::text_message_from(list.clone()));
    }
    if let Some(t) = &s.handoff {
        v.push(StopCondition::handoff(t.clone()));
    }
    if s.stop_message == Some(true) {
        v.push(StopCondition::stop_message());
    }
    if let Some(t) = &s.function_call {
        v.push(StopCondition::function_call(t.clone()));
    }
    if let Some(n) = s.token_budget {
        v.push(StopCondition::token_budget(n));
    }
    if let Some(n) = s.prompt_tokens {
        v.push(StopCondition::prompt_tokens(n));
    }
    if let Some(n) = s.completion_tokens {
        v.push(StopCondition::completion_tokens(n));
    }
    if let Some(usd) = s.max_cost {
        v.push(StopCondition::max_cost(usd));
    }
    if let Some(n) = s.max_model_calls {
        v.push(StopCondition::max_model_calls(n));
    }
    if let Some(n) = s.max_tool_calls {
        v.push(StopCondition::max_tool_calls(n));
    }
    if let Some(t) = &s.timeout {
        v.push(StopCondition::timeout(t.duration));
    }
    if let Some(list) = &s.all {
        let parts: Vec<StopCondition> = list
            .iter()
            .filter_map(|x| stop_condition(Some(x), None))
            .collect();
        if !parts.is_empty() {
            v.push(StopCondition::All(parts));
        }
    }
    if let Some(list) = &s.any {
        v.extend(list.iter().filter_map(|x| stop_condition(Some(x), None)));
    }
    v
}
