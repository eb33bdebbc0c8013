//! Reading a streamed Messages API answer, event by event:
//! `message_start` (the model, input tokens), `content_block_start`
//! (a `tool_use` block brings its id and name), `content_block_delta`
//! (`text_delta`, `input_json_delta`), `message_delta` (stop reason,
//! output tokens), `message_stop` (the end), `ping`, and `error`.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;
use troupe_runtime::message::Usage;

use super::OutputTool;
use super::response::{WireBlock, WireUsage, api_error, finish_reason};
use crate::model::http::wire::{EventReader, Step, WireError};
use crate::model::sse::SseEvent;
use crate::model::{ChatDelta, FinishReason, ToolCallDelta};

/// One event's JSON (its `type` names it; the SSE `event:` line says the same).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    index: Option<usize>,
    message: Option<StartMessage>,
    content_block: Option<WireBlock>,
    delta: Option<WireDelta>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StartMessage {
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireDelta {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    partial_json: Option<String>,
    stop_reason: Option<String>,
}

/// What a stream has told so far.
#[derive(Debug)]
pub struct StreamState {
    output: Option<OutputTool>,
    /// The content blocks that carry the output tool's input (the answer).
    answer_blocks: HashSet<usize>,
    tool_blocks: usize,
    input_tokens: Option<u64>,
    /// The model `message_start` named, said with the stop reason.
    model: Option<String>,
}

impl StreamState {
    /// A stream whose structured answer, if any, comes as `output`'s call.
    pub(super) fn new(output: Option<OutputTool>) -> Self {
        StreamState {
            output,
            answer_blocks: HashSet::new(),
            tool_blocks: 0,
            input_tokens: None,
            model: None,
        }
    }
}

impl EventReader for StreamState {
    fn event(&mut self, event: &SseEvent) -> Result<Step, WireError> {
        let wire: WireEvent = serde_json::from_str(event.data.trim())
            .map_err(|e| WireError::Malformed(e.to_string()))?;
        let kind = wire
            .kind
            .as_deref()
            .or(event.event.as_deref())
            .unwrap_or("");
        let index = wire.index.unwrap_or(0);
        let mut deltas = Vec::new();
        match kind {
            "message_start" => {
                let message = wire.message.unwrap_or_default();
                self.model = message.model;
                self.input_tokens = message.usage.and_then(|u| u.prompt());
            }
            "content_block_start" => {
                let block = wire.content_block.unwrap_or_default();
                if block.kind == "tool_use" {
                    if self.output.as_ref().map(|o| &o.name) == block.name.as_ref() {
                        self.answer_blocks.insert(index);
                    } else {
                        self.tool_blocks += 1;
                        deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                            index: Some(index),
                            id: block.id,
                            name: block.name,
                            arguments: String::new(),
                        }));
                    }
                } else if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                    deltas.push(ChatDelta::Text(text));
                }
            }
            "content_block_delta" => {
                let delta = wire.delta.unwrap_or_default();
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                            deltas.push(ChatDelta::Text(text));
                        }
                    }
                    Some("input_json_delta") => {
                        let json = delta.partial_json.unwrap_or_default();
                        if self.answer_blocks.contains(&index) {
                            if !json.is_empty() {
                                deltas.push(ChatDelta::Text(json));
                            }
                        } else {
                            deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                                index: Some(index),
                                id: None,
                                name: None,
                                arguments: json,
                            }));
                        }
                    }
                    // thinking_delta, signature_delta, citations_delta: not text.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = wire.delta.and_then(|d| d.stop_reason) {
                    let mut reason = finish_reason(Some(&reason));
                    if reason == FinishReason::ToolCalls
                        && self.tool_blocks == 0
                        && !self.answer_blocks.is_empty()
                    {
                        reason = FinishReason::Stop;
                    }
                    deltas.push(ChatDelta::Finish(reason));
                    if let Some(model) = self.model.take() {
                        deltas.push(ChatDelta::Model(model));
                    }
                }
                if let Some(usage) = wire.usage {
                    deltas.push(ChatDelta::Usage(Usage {
                        prompt_tokens: usage.prompt().or(self.input_tokens).unwrap_or(0),
                        completion_tokens: usage.output_tokens.unwrap_or(0),
                    }));
                }
            }
            "message_stop" => return Ok(Step::last(deltas)),
            "error" => {
                let error = wire.error.unwrap_or(Value::Null);
                return Err(api_error(&error));
            }
            // ping, content_block_stop, and events added later.
            _ => {}
        }
        Ok(Step::more(deltas))
    }
}
