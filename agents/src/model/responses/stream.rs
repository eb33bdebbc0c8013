//! Reading a streamed Responses API answer, event by event:
//! `response.output_item.added` (a function call's id and name),
//! `response.function_call_arguments.delta`, `response.output_text.delta`
//! (and `response.refusal.delta`), `response.output_item.done` (a call's
//! whole arguments, when no delta brought them), `response.completed` and
//! `response.incomplete` (usage, why it stopped: the end),
//! `response.failed` and `error`.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use super::response::{WireItem, WireResponse, tool_call};
use crate::model::http::wire::{EventReader, Step, WireError, error_message};
use crate::model::sse::SseEvent;
use crate::model::{ChatDelta, ToolCallDelta};

/// One event's JSON (its `type` names it; the SSE `event:` line says the same).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    output_index: Option<usize>,
    item: Option<WireItem>,
    delta: Option<String>,
    response: Option<WireResponse>,
}

/// What a stream has told so far.
#[derive(Debug, Default)]
pub struct StreamState {
    /// Output items that are function calls.
    calls: HashSet<usize>,
    /// Function calls whose arguments came in deltas.
    streamed_arguments: HashSet<usize>,
}

impl EventReader for StreamState {
    fn event(&mut self, event: &SseEvent) -> Result<Step, WireError> {
        let data = event.data.trim();
        let raw: Value =
            serde_json::from_str(data).map_err(|e| WireError::Malformed(e.to_string()))?;
        let wire: WireEvent =
            serde_json::from_value(raw.clone()).map_err(|e| WireError::Malformed(e.to_string()))?;
        let kind = wire
            .kind
            .as_deref()
            .or(event.event.as_deref())
            .unwrap_or("");
        let index = wire.output_index.unwrap_or(0);
        let mut deltas = Vec::new();
        match kind {
            "response.output_item.added" => {
                if let Some(item) = wire.item.filter(|i| i.kind == "function_call") {
                    self.calls.insert(index);
                    let call = tool_call(item, index);
                    if !call.arguments.is_empty() && call.arguments != "{}" {
                        self.streamed_arguments.insert(index);
                    }
                    deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                        index: Some(index),
                        id: Some(call.id),
                        name: Some(call.name),
                        arguments: if self.streamed_arguments.contains(&index) {
                            call.arguments
                        } else {
                            String::new()
                        },
                    }));
                }
            }
            "response.function_call_arguments.delta" => {
                let piece = wire.delta.unwrap_or_default();
                if !piece.is_empty() {
                    self.streamed_arguments.insert(index);
                    deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                        index: Some(index),
                        id: None,
                        name: None,
                        arguments: piece,
                    }));
                }
            }
            "response.output_item.done" => {
                if let Some(item) = wire.item.filter(|i| i.kind == "function_call")
                    && !self.streamed_arguments.contains(&index)
                {
                    let first = self.calls.insert(index);
                    let call = tool_call(item, index);
                    deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                        index: Some(index),
                        id: first.then(|| call.id.clone()),
                        name: first.then(|| call.name.clone()),
                        arguments: call.arguments,
                    }));
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = wire.delta.filter(|t| !t.is_empty()) {
                    deltas.push(ChatDelta::Text(text));
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = wire.response.unwrap_or_default();
                if let Some(failure) = response.failure() {
                    return Err(failure);
                }
                deltas.push(ChatDelta::Finish(
                    response.finish_reason(!self.calls.is_empty()),
                ));
                if let Some(usage) = &response.usage {
                    deltas.push(ChatDelta::Usage(usage.usage()));
                }
                return Ok(Step::last(deltas));
            }
            "error" => return Err(WireError::Api(error_message(&raw))),
            // response.created, response.in_progress, *.done, content parts…
            _ => {}
        }
        Ok(Step::more(deltas))
    }
}
