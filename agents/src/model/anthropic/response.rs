//! Reading a whole Messages API answer: `content` blocks (`text`,
//! `tool_use`; others such as `thinking` are skipped), `stop_reason` and
//! `usage`, or an `{"type": "error", "error": {…}}` body.

use serde::Deserialize;
use serde_json::Value;
use troupe_runtime::{message::ToolCall, message::Usage};

use super::OutputTool;
use crate::model::http::wire::{WireError, error_message};
use crate::model::{ChatResponse, FinishReason};

/// A Messages API response (or error) body; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    #[serde(rename = "type")]
    kind: Option<String>,
    model: Option<String>,
    content: Option<Vec<WireBlock>>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

/// One content block.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireBlock {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) text: Option<String>,
    pub(super) id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) input: Option<Value>,
}

/// Token counts; input is split three ways when prompt caching is on.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) cache_creation_input_tokens: Option<u64>,
    pub(super) cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// The prompt's tokens, cached or not.
    pub(super) fn prompt(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

/// An `error` object (of a body or a stream event) as a [`WireError::Api`].
pub(super) fn api_error(error: &Value) -> WireError {
    WireError::Api(error_message(error))
}

/// A `stop_reason` as a finish reason.
pub(super) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("stop_sequence") | Some("pause_turn") => FinishReason::Stop,
        Some("refusal") => FinishReason::ContentFilter,
        other => FinishReason::from_wire(other),
    }
}

/// Reads a whole answer; the output tool's call becomes the text.
pub(super) fn parse(text: &str, output: Option<&OutputTool>) -> Result<ChatResponse, WireError> {
    let message: WireMessage =
        serde_json::from_str(text).map_err(|e| WireError::Malformed(e.to_string()))?;
    if let Some(error) = message.error.as_ref().filter(|e| !e.is_null()) {
        return Err(api_error(error));
    }
    let Some(blocks) = message.content else {
        return Err(WireError::Malformed(format!(
            "the response has no content (type {})",
            message.kind.as_deref().unwrap_or("missing")
        )));
    };
    let mut content: Option<String> = None;
    let mut tool_calls = Vec::new();
    let mut answered = false;
    for (i, block) in blocks.into_iter().enumerate() {
        match block.kind.as_str() {
            "text" => content
                .get_or_insert_with(String::new)
                .push_str(block.text.as_deref().unwrap_or("")),
            "tool_use" if output.is_some_and(|o| Some(&o.name) == block.name.as_ref()) => {
                let input = block.input.unwrap_or(Value::Null);
                // The answer replaces any preamble the model wrote first.
                content = Some(input.to_string());
                answered = true;
            }
            "tool_use" => tool_calls.push(ToolCall {
                id: block
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("toolu_{i}")),
                name: block.name.unwrap_or_default(),
                arguments: match block.input {
                    None | Some(Value::Null) => "{}".to_string(),
                    Some(v) => v.to_string(),
                },
            }),
            _ => {}
        }
    }
    let mut finish_reason = finish_reason(message.stop_reason.as_deref());
    if answered && tool_calls.is_empty() && finish_reason == FinishReason::ToolCalls {
        finish_reason = FinishReason::Stop;
    }
    Ok(ChatResponse {
        content,
        tool_calls,
        finish_reason,
        usage: message.usage.map(|u| Usage {
            prompt_tokens: u.prompt().unwrap_or(0),
            completion_tokens: u.output_tokens.unwrap_or(0),
        }),
        model: message.model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thinking_is_skipped_and_cached_input_counts() {
        let r = parse(
            &json!({"type": "message", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "text", "text": "hi"}
            ], "stop_reason": "stop_sequence", "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 2}})
            .to_string(),
            None,
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("hi"));
        assert_eq!(r.finish_reason, FinishReason::Stop);
        assert_eq!(r.usage.map(|u| u.prompt_tokens), Some(103));
    }

    #[test]
    fn error_bodies_and_odd_shapes() {
        match parse(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            None,
        ) {
            Err(WireError::Api(m)) => assert_eq!(m, "overloaded_error: Overloaded"),
            other => panic!("expected an API error, got {other:?}"),
        }
        assert!(matches!(parse("{}", None), Err(WireError::Malformed(_))));
        assert!(matches!(
            parse("<html>", None),
            Err(WireError::Malformed(_))
        ));
    }
}
