//! The OpenAI chat-completions wire format: building request bodies and
//! reading responses and stream chunks.
//!
//! Reading is lenient, because OpenAI-compatible servers (Ollama, vLLM,
//! llama.cpp, LM Studio, proxies) differ in small ways: missing `usage`,
//! empty or missing `finish_reason`, `content: null`, content as a list of
//! parts, tool-call `arguments` as an object instead of JSON text, tool-call
//! deltas without `index`. Every field is optional; only a body that is not
//! JSON, or has no choice at all, is an error.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use troupe_runtime::{message::ToolCall, message::Usage};

use super::http::wire::WireError;
use super::{
    ChatDelta, ChatMessage, ChatRequest, ChatResponse, FinishReason, ResponseFormat, ToolCallDelta,
    ToolChoice,
};

/// The JSON body of a request.
pub(crate) fn request_body(model: &str, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "messages".into(),
        Value::Array(request.messages.iter().map(message_json).collect()),
    );
    // Some servers reject an empty `tools` array, and `tool_choice` without tools.
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    match &request.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => {
            body.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Some(ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        }) => {
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": strict}
                }),
            );
        }
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = request.max_tokens {
        body.insert("max_tokens".into(), json!(m));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn message_json(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User {
            content,
            name: Some(name),
        } => json!({"role": "user", "content": content, "name": name}),
        ChatMessage::User {
            content,
            name: None,
        } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            msg.insert("content".into(), json!(content));
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(msg)
        }
        ChatMessage::Tool { call_id, content } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireCompletion {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
    model: Option<String>,
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireChoice {
    index: Option<usize>,
    message: Option<WireMessage>,
    delta: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    content: Option<Value>,
    tool_calls: Option<Vec<WireToolCall>>,
    /// The legacy single-call form.
    function_call: Option<WireFunction>,
    refusal: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            completion_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

fn parse(text: &str) -> Result<WireCompletion, WireError> {
    let completion: WireCompletion =
        serde_json::from_str(text).map_err(|e| WireError::Malformed(e.to_string()))?;
    if let Some(error) = &completion.error
        && !error.is_null()
    {
        return Err(WireError::Api(error_message(error)));
    }
    Ok(completion)
}

/// The message of an `{"error": ...}` object (a string, or an object with
/// `message`), else the whole JSON.
pub(crate) fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => error.to_string(),
        },
        other => other.to_string(),
    }
}

/// Content as a string, or as a list of parts whose text is joined.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    other => other.get("text").and_then(Value::as_str),
                })
                .collect(),
        ),
        other => Some(other.to_string()),
    }
}

/// Arguments as JSON text, whether sent as text or as an object.
fn arguments_text(arguments: &Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Reads a non-streamed response body.
pub(crate) fn parse_response(text: &str) -> Result<ChatResponse, WireError> {
    let completion = parse(text)?;
    let usage = completion.usage.as_ref().map(WireUsage::usage);
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(WireError::Malformed("the response has no choices".into()));
    };
    let message = choice.message.or(choice.delta).unwrap_or_default();
    let mut tool_calls: Vec<ToolCall> = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let function = c.function.unwrap_or_default();
            ToolCall {
                id: c
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name: function.name.unwrap_or_default(),
                arguments: non_empty_arguments(arguments_text(&function.arguments)),
            }
        })
        .collect();
    if tool_calls.is_empty()
        && let Some(f) = message.function_call
    {
        tool_calls.push(ToolCall {
            id: "call_0".into(),
            name: f.name.unwrap_or_default(),
            arguments: non_empty_arguments(arguments_text(&f.arguments)),
        });
    }
    let content = message
        .content
        .as_ref()
        .and_then(content_text)
        .or(message.refusal);
    Ok(ChatResponse {
        content,
        tool_calls,
        finish_reason: FinishReason::from_wire(choice.finish_reason.as_deref()),
        usage,
        model: completion.model,
    })
}

fn non_empty_arguments(arguments: String) -> String {
    if arguments.trim().is_empty() {
        "{}".to_string()
    } else {
        arguments
    }
}

/// Reads one streamed chunk (the JSON of one SSE `data:` line).
pub(crate) fn parse_chunk(text: &str) -> Result<Vec<ChatDelta>, WireError> {
    let completion = parse(text)?;
    let mut deltas = Vec::new();
    // Only the first choice is followed: troupe never asks for several.
    for choice in completion
        .choices
        .into_iter()
        .filter(|c| c.index.unwrap_or(0) == 0)
    {
        if let Some(delta) = choice.delta.or(choice.message) {
            if let Some(text) = delta.content.as_ref().and_then(content_text)
                && !text.is_empty()
            {
                deltas.push(ChatDelta::Text(text));
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let function = call.function.unwrap_or_default();
                deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                    index: call.index,
                    id: call.id,
                    name: function.name,
                    arguments: arguments_text(&function.arguments),
                }));
            }
            if let Some(f) = delta.function_call {
                deltas.push(ChatDelta::ToolCall(ToolCallDelta {
                    index: Some(0),
                    id: None,
                    name: f.name,
                    arguments: arguments_text(&f.arguments),
                }));
            }
        }
        if choice.finish_reason.is_some() {
            deltas.push(ChatDelta::Finish(FinishReason::from_wire(
                choice.finish_reason.as_deref(),
            )));
        }
    }
    if let Some(usage) = &completion.usage {
        deltas.push(ChatDelta::Usage(usage.usage()));
    }
    // Every chunk names the model; said once it has something to say.
    if let Some(model) = completion.model.filter(|m| !m.is_empty())
        && !deltas.is_empty()
    {
        deltas.push(ChatDelta::Model(model));
    }
    Ok(deltas)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolDefinition;

    #[test]
    fn request_body_has_the_openai_shape() {
        let request = ChatRequest::new(vec![
            ChatMessage::system("be brief"),
            ChatMessage::User {
                content: "hi".into(),
                name: Some("alice".into()),
            },
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "add".into(),
                    arguments: "{\"a\":1}".into(),
                }],
            },
            ChatMessage::tool("c1", "2"),
        ])
        .with_tools(vec![ToolDefinition {
            name: "add".into(),
            description: "adds".into(),
            parameters: json!({"type": "object"}),
        }])
        .with_tool_choice(ToolChoice::Tool("add".into()));
        let body = request_body("m", &request, true);
        assert_eq!(body["model"], "m");
        assert_eq!(body["messages"][1]["name"], "alice");
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "add");
        assert_eq!(body["tool_choice"]["function"]["name"], "add");
        assert_eq!(body["stream_options"]["include_usage"], true);

        let bare = request_body("m", &ChatRequest::new(vec![]), false);
        assert!(bare.get("tools").is_none() && bare.get("stream").is_none());
    }

    #[test]
    fn lenient_response_shapes() {
        let r = parse_response(
            r#"{"choices":[{"message":{"content":null,"tool_calls":[
                {"function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":""}]}"#,
        )
        .unwrap();
        assert_eq!(r.content, None);
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].arguments, "{\"x\":1}");
        assert_eq!(r.finish_reason, FinishReason::Unspecified);
        assert_eq!(r.usage, None);

        let r = parse_response(
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}],
                "usage":{"prompt_tokens":5}}"#,
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("ab"));
        assert_eq!(
            r.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
            Some((5, 0))
        );

        assert!(matches!(
            parse_response("{\"choices\":[]}"),
            Err(WireError::Malformed(_))
        ));
        assert!(matches!(
            parse_response("<html>"),
            Err(WireError::Malformed(_))
        ));
        match parse_response(r#"{"error":{"message":"quota"}}"#) {
            Err(WireError::Api(m)) => assert_eq!(m, "quota"),
            other => panic!("expected an API error, got {other:?}"),
        }
    }

    #[test]
    fn chunks_with_usage_only_and_finish_only() {
        let d = parse_chunk(r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#)
            .unwrap();
        assert_eq!(
            d,
            vec![ChatDelta::Usage(Usage {
                prompt_tokens: 1,
                completion_tokens: 2
            })]
        );
        let d = parse_chunk(r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!(d, vec![ChatDelta::Finish(FinishReason::Stop)]);
    }
}
