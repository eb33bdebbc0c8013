//! The body of a Messages API request: `system` at the top, the
//! conversation as `user` and `assistant` turns of content blocks (tool
//! calls as `tool_use`, their results as `tool_result` in the next user
//! turn), tools with `input_schema`, `tool_choice`, and structured output
//! as a forced tool.

use serde_json::{Map, Value, json};

use super::OutputTool;
use crate::model::http::wire::{instructions, user_text};
use crate::model::{ChatMessage, ChatRequest, ToolChoice};

/// The JSON body asking `model` for `request`.
pub(super) fn body(model: &str, request: &ChatRequest, stream: bool, max_tokens: u32) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(max_tokens)),
    );
    if let Some(system) = instructions(&request.messages) {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages(&request.messages)));
    let output = OutputTool::of(request);
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.parameters,
            })
        })
        .collect();
    if let Some(out) = &output {
        tools.push(json!({
            "name": out.name,
            "description": "Give your final answer by calling this tool: its input is the answer.",
            "input_schema": out.schema,
        }));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = tool_choice(request, output.as_ref()) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// The `tool_choice`: the request's, except that structured output must
/// end in its tool (alone: that tool; beside others: any tool).
fn tool_choice(request: &ChatRequest, output: Option<&OutputTool>) -> Option<Value> {
    match (output, &request.tool_choice) {
        (_, Some(ToolChoice::Tool(name))) => Some(json!({"type": "tool", "name": name})),
        (Some(out), _) if request.tools.is_empty() => {
            Some(json!({"type": "tool", "name": out.name}))
        }
        (Some(_), _) => Some(json!({"type": "any"})),
        (None, Some(ToolChoice::Auto)) => Some(json!({"type": "auto"})),
        (None, Some(ToolChoice::None)) => Some(json!({"type": "none"})),
        (None, Some(ToolChoice::Required)) => Some(json!({"type": "any"})),
        (None, None) => None,
    }
}

/// The conversation as Messages API turns. System messages went to
/// `system`; consecutive tool results share one user turn; a user's name
/// (another agent's) leads its text, as the API has no name field.
fn messages(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for m in messages {
        if !matches!(m, ChatMessage::Tool { .. }) && !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        match m {
            ChatMessage::System { .. } => {}
            ChatMessage::User { content, name } => {
                let text = user_text(content, name.as_deref());
                out.push(json!({"role": "user", "content": text}));
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": arguments_object(&call.arguments),
                    }));
                }
                // The API refuses empty text blocks: an empty turn is left out.
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            ChatMessage::Tool { call_id, content } => results.push(json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
            })),
        }
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    out
}

/// A call's arguments as the object `tool_use.input` must be (arguments
/// that are not a JSON object are sent as `{}`).
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ResponseFormat, ToolDefinition};
    use troupe_runtime::message::ToolCall;

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn the_conversation_has_the_messages_shape() {
        let request = ChatRequest::new(vec![
            ChatMessage::system("be brief"),
            ChatMessage::User {
                content: "hi".into(),
                name: Some("alice".into()),
            },
            ChatMessage::Assistant {
                content: Some("".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "add".into(),
                        arguments: "{\"a\":1}".into(),
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "add".into(),
                        arguments: "".into(),
                    },
                ],
            },
            ChatMessage::tool("toolu_1", "2"),
            ChatMessage::tool("toolu_2", "3"),
        ])
        .with_tools(vec![tool("add")])
        .with_tool_choice(ToolChoice::Required);
        let body = body("claude", &request, true, 4096);
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["stream"], true);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0], json!({"role": "user", "content": "alice: hi"}));
        assert_eq!(messages[1]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[1]["content"][0]["input"], json!({"a": 1}));
        assert_eq!(messages[1]["content"][1]["input"], json!({}));
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "toolu_2");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
    }

    #[test]
    fn structured_output_is_a_forced_tool() {
        let format = ResponseFormat::JsonSchema {
            name: "verdict".into(),
            schema: json!({"type": "object", "required": ["ok"]}),
            strict: true,
        };
        let alone =
            ChatRequest::new(vec![ChatMessage::user("judge")]).with_response_format(format.clone());
        let body_alone = body("claude", &alone, false, 10);
        assert_eq!(body_alone["tools"][0]["name"], "verdict");
        assert_eq!(
            body_alone["tool_choice"],
            json!({"type": "tool", "name": "verdict"})
        );
        assert!(body_alone.get("stream").is_none() && body_alone.get("system").is_none());
        let beside = alone.with_tools(vec![tool("look")]);
        let body_beside = body("claude", &beside, false, 10);
        assert_eq!(body_beside["tools"][1]["name"], "verdict");
        assert_eq!(body_beside["tool_choice"], json!({"type": "any"}));
    }
}
