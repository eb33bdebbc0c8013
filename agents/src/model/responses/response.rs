//! Reading a whole Responses API answer: the `output` items (`message`
//! with `output_text` or `refusal` parts, `function_call`; others such as
//! `reasoning` are skipped), `status` and `incomplete_details`, `usage`, or
//! an `error`.

use serde::Deserialize;
use serde_json::Value;
use troupe_runtime::{message::ToolCall, message::Usage};

use crate::model::http::wire::{WireError, error_message};
use crate::model::{ChatResponse, FinishReason};

/// A response object (the body, or `response` of a stream's last event).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireResponse {
    status: Option<String>,
    model: Option<String>,
    output: Option<Vec<WireItem>>,
    incomplete_details: Option<Incomplete>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
}

/// One output item.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireItem {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) call_id: Option<String>,
    pub(super) id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) arguments: Option<String>,
    content: Option<Vec<WirePart>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WirePart {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    refusal: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Incomplete {
    reason: Option<String>,
}

/// Token counts.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl WireUsage {
    /// As troupe counts tokens.
    pub(super) fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.input_tokens.unwrap_or(0),
            completion_tokens: self.output_tokens.unwrap_or(0),
        }
    }
}

impl WireResponse {
    /// The failure a `failed` response (or any response with an `error`) reports.
    pub(super) fn failure(&self) -> Option<WireError> {
        let error = self.error.as_ref().filter(|e| !e.is_null());
        match (self.status.as_deref(), error) {
            (_, Some(error)) => Some(WireError::Api(error_message(error))),
            (Some("failed"), None) => Some(WireError::Api("the response failed".into())),
            _ => None,
        }
    }

    /// Why the model stopped: an incomplete response says why, function
    /// calls mean tool calls, anything else finished.
    pub(super) fn finish_reason(&self, has_calls: bool) -> FinishReason {
        match (self.status.as_deref(), &self.incomplete_details) {
            (Some("incomplete"), Some(details)) => match details.reason.as_deref() {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                other => FinishReason::Other(other.unwrap_or("incomplete").to_string()),
            },
            _ if has_calls => FinishReason::ToolCalls,
            (None, _) => FinishReason::Unspecified,
            _ => FinishReason::Stop,
        }
    }
}

/// A `function_call` item as a tool call.
pub(super) fn tool_call(item: WireItem, i: usize) -> ToolCall {
    let arguments = item.arguments.unwrap_or_default();
    ToolCall {
        id: item
            .call_id
            .filter(|id| !id.is_empty())
            .or(item.id)
            .unwrap_or_else(|| format!("call_{i}")),
        name: item.name.unwrap_or_default(),
        arguments: if arguments.trim().is_empty() {
            "{}".into()
        } else {
            arguments
        },
    }
}

/// Reads a response object.
pub(super) fn from_wire(mut response: WireResponse) -> Result<ChatResponse, WireError> {
    if let Some(failure) = response.failure() {
        return Err(failure);
    }
    let Some(items) = response.output.take() else {
        return Err(WireError::Malformed("the response has no output".into()));
    };
    let mut content: Option<String> = None;
    let mut tool_calls = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item.kind.as_str() {
            "message" => {
                for part in item.content.into_iter().flatten() {
                    let text = match part.kind.as_str() {
                        "output_text" => part.text,
                        "refusal" => part.refusal,
                        _ => None,
                    };
                    if let Some(text) = text {
                        content.get_or_insert_with(String::new).push_str(&text);
                    }
                }
            }
            "function_call" => tool_calls.push(tool_call(item, i)),
            _ => {}
        }
    }
    Ok(ChatResponse {
        finish_reason: response.finish_reason(!tool_calls.is_empty()),
        content,
        tool_calls,
        usage: response.usage.map(|u| u.usage()),
        model: response.model,
    })
}

/// Reads a whole answer body.
pub(super) fn parse(text: &str) -> Result<ChatResponse, WireError> {
    let response: WireResponse =
        serde_json::from_str(text).map_err(|e| WireError::Malformed(e.to_string()))?;
    from_wire(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn incomplete_failed_and_odd_shapes() {
        let r = parse(
            &json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                "output": [{"type": "reasoning", "summary": []},
                    {"type": "message", "content": [{"type": "output_text", "text": "cut"}]}],
                "usage": {"input_tokens": 4, "output_tokens": 16}})
            .to_string(),
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("cut"));
        assert_eq!(r.finish_reason, FinishReason::Length);
        assert_eq!(r.usage.map(|u| u.total()), Some(20));
        match parse(
            r#"{"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#,
        ) {
            Err(WireError::Api(m)) => assert_eq!(m, "server_error: boom"),
            other => panic!("expected an API error, got {other:?}"),
        }
        assert!(matches!(parse("{}"), Err(WireError::Malformed(_))));
    }
}
