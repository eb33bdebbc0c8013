//! A team-as-tool's input and result: by default the tool takes a
//! `message` and answers with the team's answer as text; a config's
//! `serve: {mcp: {tool: …}}` may declare another input schema (the
//! arguments, checked against it, reach the team as JSON text — or as the
//! message, when the schema's one property is a string) and a `content`
//! result (the answer read as MCP content blocks).

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};
use troupe::config::McpToolResult;

use super::McpTeam;

/// The default input: the message the team runs on.
fn message_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "description": "The task or message for the team.",
            },
        },
        "required": ["message"],
    })
}

/// The team's input schema: the declared one, else `{message}`.
pub(super) fn input_schema(team: &McpTeam) -> Arc<JsonObject> {
    let declared = team.mcp().tool.and_then(|t| t.input_schema);
    match declared.unwrap_or_else(message_schema) {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The one string property of `schema`, when it has exactly one property
/// and that is a string: its value is then the message.
fn only_string(schema: &Value) -> Option<&str> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    let (name, prop) = props.iter().next().filter(|_| props.len() == 1)?;
    (prop.get("type") == Some(&json!("string"))).then_some(name.as_str())
}

/// What the team runs on for `request`, or why the call's input is wrong
/// (a tool error, for the model to read and correct).
pub(super) fn input(team: &McpTeam, request: &CallToolRequestParams) -> Result<String, String> {
    let Some(schema) = team.mcp().tool.and_then(|t| t.input_schema) else {
        return message(request);
    };
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| format!("the tool `{}` has a bad input schema: {e}", request.name))?;
    let problems: Vec<String> = validator
        .iter_errors(&args)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "the arguments of `{}` do not fit its input schema: {}",
            request.name,
            problems.join("; ")
        ));
    }
    match only_string(&schema).and_then(|name| args.get(name)) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Ok(args.to_string()),
    }
}

/// The call's `message` argument.
pub(super) fn message(request: &CallToolRequestParams) -> Result<String, String> {
    let found = request.arguments.as_ref().and_then(|a| a.get("message"));
    match found {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err("`message` is empty: give the team its task".into()),
        Some(other) => Err(format!("`message` must be a string, not {other}")),
        None => Err(format!(
            "`{}` takes a `message` (a string): the task for the team",
            request.name
        )),
    }
}

/// The tool's result for the team's `answer`.
pub(super) fn result(team: &McpTeam, answer: String) -> CallToolResult {
    let content_form = team.mcp().tool.and_then(|t| t.result) == Some(McpToolResult::Content);
    if content_form && let Some(r) = as_content(&answer) {
        return r;
    }
    CallToolResult::success(vec![ContentBlock::text(answer)])
}

/// `answer` read as MCP content: a list of blocks, or an object with
/// `content` (and `isError`).
fn as_content(answer: &str) -> Option<CallToolResult> {
    let value: Value = serde_json::from_str(answer.trim()).ok()?;
    let (content, is_error) = match value {
        Value::Array(list) => (list, false),
        Value::Object(mut map) => {
            let is_error = map.get("isError").and_then(Value::as_bool) == Some(true);
            match map.remove("content") {
                Some(Value::Array(list)) => (list, is_error),
                _ => return None,
            }
        }
        _ => return None,
    };
    let blocks: Vec<ContentBlock> = content
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .ok()?;
    Some(if is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_reads_as_content_blocks_or_stays_text() {
        let list = r#"[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}]"#;
        let r = as_content(list).unwrap();
        assert_eq!(r.content.len(), 2);
        assert_ne!(r.is_error, Some(true));
        let failed = as_content(r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#);
        assert_eq!(failed.unwrap().is_error, Some(true));
        assert!(as_content("plain words").is_none());
        assert!(as_content(r#"[{"type":"nonsense"}]"#).is_none());
    }

    #[test]
    fn a_call_needs_a_message_string() {
        let call = |args: Value| {
            let mut p = CallToolRequestParams::new("team");
            if let Value::Object(map) = args {
                p = p.with_arguments(map);
            }
            message(&p)
        };
        assert_eq!(call(json!({"message": "hi"})).unwrap(), "hi");
        assert!(call(json!({})).unwrap_err().contains("takes a `message`"));
        assert!(call(json!({"message": " "})).unwrap_err().contains("empty"));
        assert!(call(json!({"message": 3})).unwrap_err().contains("not 3"));
        assert!(call(Value::Null).unwrap_err().contains("takes a `message`"));
    }
}
