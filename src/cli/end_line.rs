//! The last line of `--events jsonl`: the run's result, or its error.
//! Typed, so that `troupe schema --events` describes it beside the event
//! lines (`schema/events.schema.json`).

use schemars::JsonSchema;
use serde::Serialize;
use troupe::{InputRequest, event::FinalStatus, message::Usage, stats::RunStats};

/// The line that ends a run's JSON lines.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum EndLine {
    /// The run ended (completed, stopped, cancelled, interrupted or
    /// waiting for input).
    Result {
        /// How it ended.
        status: FinalStatus,
        /// What the status says in words.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The final response's text ("" if no agent spoke).
        final_response: String,
        /// Agent turns taken in this run.
        #[serde(skip_serializing_if = "Option::is_none")]
        turns: Option<u64>,
        /// Tokens spent in this run.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the run spent, per agent (by path) and in total: turns,
        /// model calls, tool calls, tokens, cost.
        #[serde(skip_serializing_if = "Option::is_none")]
        stats: Option<RunStats>,
        /// The run's id (`troupe run --resume ID`).
        #[serde(skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        /// The conversation (`troupe chat --session ID`).
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// The last checkpoint saved, if the config has a store.
        #[serde(skip_serializing_if = "Option::is_none")]
        checkpoint: Option<String>,
        /// The questions waiting for an answer (`--answer ID=TEXT`);
        /// empty unless the run waits.
        requests: Vec<Question>,
    },
    /// The run failed.
    Error {
        /// Why.
        error: String,
        /// The run's id.
        run_id: String,
        /// What the run spent before it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        stats: Option<RunStats>,
    },
}

/// A question waiting for the caller.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Question {
    /// The id to answer it by.
    id: String,
    /// The agent that asks.
    agent: String,
    /// The question.
    prompt: String,
}

impl Question {
    /// The questions of `requests`.
    pub(crate) fn all(requests: &[InputRequest]) -> Vec<Question> {
        requests
            .iter()
            .map(|q| Question {
                id: q.id.clone(),
                agent: q.agent.clone(),
                prompt: q.prompt.clone(),
            })
            .collect()
    }
}

impl EndLine {
    /// The line, with its newline.
    pub(crate) fn to_line(&self) -> String {
        // Serializing plain data into a string does not fail.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// The JSON Schema of a line of `--events jsonl`: an event, or the line
/// that ends the run.
pub(crate) fn schema() -> serde_json::Value {
    let mut events = troupe::event::json_schema();
    let end = schemars::schema_for!(EndLine).to_value();
    let mut defs = events
        .as_object_mut()
        .and_then(|o| o.remove("$defs"))
        .unwrap_or_else(|| serde_json::json!({}));
    if let (Some(defs), Some(end_defs)) = (
        defs.as_object_mut(),
        end.get("$defs").and_then(|d| d.as_object()),
    ) {
        for (k, v) in end_defs {
            defs.insert(k.clone(), v.clone());
        }
    }
    let strip = |mut v: serde_json::Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("$defs");
            o.remove("$schema");
            o.remove("title");
        }
        v
    };
    let mut event = strip(events.clone());
    if let Some(o) = event.as_object_mut() {
        o.remove("description");
    }
    serde_json::json!({
        "$schema": events.get("$schema").cloned().unwrap_or_default(),
        "title": "troupe events (JSON lines)",
        "description": "One line of `troupe run --events jsonl` / `troupe chat --events jsonl`: \
            an event of the run (stamped with the run's id, its number in the run's sequence \
            and its time; `type` names the kind), or the line that ends the run \
            (`type` `result` or `error`).",
        "oneOf": [
            { "title": "event", "allOf": [event] },
            { "title": "end of run", "allOf": [strip(end)] },
        ],
        "$defs": defs,
    })
}
