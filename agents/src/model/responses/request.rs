//! The body of a Responses API request: `instructions`, the conversation
//! as `input` items (messages, `function_call`, `function_call_output`),
//! function tools, `tool_choice`, `text.format`, and `store: false`.

use serde_json::{Map, Value, json};

use crate::model::http::wire::{instructions, user_text};
use crate::model::{ChatMessage, ChatRequest, ResponseFormat, ToolChoice};

/// The JSON body asking `model` for `request`.
pub(super) fn body(model: &str, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(text) = instructions(&request.messages) {
        body.insert("instructions".into(), json!(text));
    }
    let input: Vec<Value> = request.messages.iter().flat_map(input_items).collect();
    body.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": false,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    let format = match &request.response_format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some(json!({"type": "json_object"})),
        Some(ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        }) => {
            Some(json!({"type": "json_schema", "name": name, "schema": schema, "strict": strict}))
        }
    };
    if let Some(format) = format {
        body.insert("text".into(), json!({"format": format}));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(m));
    }
    body.insert("store".into(), json!(false));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// The input items of one message (system messages went to `instructions`).
fn input_items(m: &ChatMessage) -> Vec<Value> {
    match m {
        ChatMessage::System { .. } => Vec::new(),
        ChatMessage::User { content, name } => {
            let text = user_text(content, name.as_deref());
            vec![json!({"type": "message", "role": "user", "content": text})]
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let text = content.as_deref().filter(|t| !t.is_empty());
            let message =
                text.map(|t| json!({"type": "message", "role": "assistant", "content": t}));
            message
                .into_iter()
                .chain(tool_calls.iter().map(|c| {
                    json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments,
                    })
                }))
                .collect()
        }
        ChatMessage::Tool { call_id, content } => vec![json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": content,
        })],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolDefinition;
    use troupe_runtime::message::ToolCall;

    #[test]
    fn the_conversation_is_input_items() {
        let request = ChatRequest::new(vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("add"),
            ChatMessage::Assistant {
                content: Some("On it.".into()),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "add".into(),
                    arguments: "{\"a\":1}".into(),
                }],
            },
            ChatMessage::tool("call_1", "2"),
        ])
        .with_tools(vec![ToolDefinition {
            name: "add".into(),
            description: "adds".into(),
            parameters: json!({"type": "object"}),
        }])
        .with_tool_choice(ToolChoice::Tool("add".into()))
        .with_response_format(ResponseFormat::JsonSchema {
            name: "sum".into(),
            schema: json!({"type": "object"}),
            strict: true,
        });
        let body = body("gpt", &request, false);
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["store"], false);
        assert!(body.get("stream").is_none());
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 4);
        assert_eq!(input[2]["type"], "function_call");
        assert_eq!(input[2]["arguments"], "{\"a\":1}");
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "2"})
        );
        assert_eq!(body["tools"][0]["name"], "add");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "name": "add"})
        );
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["name"], "sum");
    }
}
