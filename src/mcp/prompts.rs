//! Prompts: `prompts/list` and `prompts/get` of the declared prompts, each
//! `{name}` in a message's text or embedded resource replaced by the
//! argument's value. A missing required argument is asked of a stateless
//! (2026-07-28) client's user — an `InputRequiredResult` with one form per
//! missing argument, keyed by its name, answered by calling again with
//! `inputResponses` — and is the client's error otherwise.

use std::collections::BTreeMap;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationSchema, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequest as McpInput, InputRequiredResult, JsonObject,
    ListPromptsResult,
};
use serde_json::{Value, json};
use troupe::config::{McpPromptArgumentSpec, McpPromptMessageSpec, McpPromptSpec, McpRole};

use super::resources::{cached, typed};
use super::surface::{Surface, fill};

/// How long a client may keep the list (the declared prompts stay as long
/// as the server runs).
const LIST_TTL_MS: u64 = 60_000;

/// `prompts/list`.
pub(super) fn list(surface: &Surface) -> Result<ListPromptsResult, McpError> {
    let prompts: Vec<Value> = surface
        .prompts
        .iter()
        .map(|p| {
            let arguments: Vec<Value> = p
                .arguments
                .iter()
                .map(|a| {
                    json!({
                        "name": a.name,
                        "description": a.description.clone().unwrap_or_else(|| a.name.clone()),
                        "required": a.required,
                    })
                })
                .collect();
            json!({
                "name": p.name,
                "description": p.description.clone().unwrap_or_else(|| p.name.clone()),
                "arguments": arguments,
            })
        })
        .collect();
    typed(cached(json!({"prompts": prompts}), LIST_TTL_MS))
}

/// `prompts/get` of `name` with `arguments` (and, from a stateless
/// client, the answers to the arguments it was asked for).
pub(super) fn get(
    surface: &Surface,
    request: &GetPromptRequestParams,
    stateless: bool,
) -> Result<GetPromptResponse, McpError> {
    let name = request.name.as_str();
    let mut given = request.arguments.clone().unwrap_or_default();
    for (key, response) in request.input_responses.iter().flatten() {
        if let Some(value) = answered(key, response)? {
            given.entry(key.clone()).or_insert(value);
        }
    }
    if stateless && let Some(prompt) = surface.prompts.iter().find(|p| p.name == name) {
        let missing: Vec<_> = prompt
            .arguments
            .iter()
            .filter(|a| a.required && !given.contains_key(&a.name))
            .collect();
        if !missing.is_empty() {
            let asks: BTreeMap<String, McpInput> = missing
                .iter()
                .map(|a| (a.name.clone(), ask(prompt, a)))
                .collect();
            return Ok(InputRequiredResult::new(Some(asks), None).into());
        }
    }
    complete(surface, name, Some(&given)).map(Into::into)
}

/// The form asking for `arg` of `prompt`: one field named after it.
fn ask(prompt: &McpPromptSpec, arg: &McpPromptArgumentSpec) -> McpInput {
    let what = arg.description.clone().unwrap_or_else(|| arg.name.clone());
    let schema = json!({
        "type": "object",
        "properties": {arg.name.clone(): {"type": "string", "description": what}},
        "required": [arg.name],
    });
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("The prompt `{}` needs {what}.", prompt.name),
        requested_schema: serde_json::from_value::<ElicitationSchema>(schema)
            .unwrap_or_else(|_| ElicitationSchema::builder().build_unchecked()),
    };
    McpInput::Elicitation(ElicitRequest::new(params))
}

/// The value an `inputResponses` entry gives the argument `key`: the
/// accepted form's field of that name (or its only field); nothing when
/// declined.
fn answered(key: &str, response: &Value) -> Result<Option<Value>, McpError> {
    let bad =
        |why: &str| McpError::invalid_params(format!("inputResponses[\"{key}\"]: {why}"), None);
    let Value::Object(map) = response else {
        return Err(bad("must be an object (`action`, `content`)"));
    };
    if map.get("action").and_then(Value::as_str) != Some("accept") {
        return Ok(None);
    }
    let Some(Value::Object(content)) = map.get("content") else {
        return Err(bad("an accepted form needs its `content`"));
    };
    Ok(content
        .get(key)
        .or_else(|| {
            (content.len() == 1)
                .then(|| content.values().next())
                .flatten()
        })
        .cloned())
}

/// `prompts/get` of `name` with every argument it needs.
fn complete(
    surface: &Surface,
    name: &str,
    arguments: Option<&JsonObject>,
) -> Result<GetPromptResult, McpError> {
    let Some(prompt) = surface.prompts.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = surface.prompts.iter().map(|p| p.name.as_str()).collect();
        return Err(McpError::invalid_params(
            format!("no prompt `{name}`; served: {}", names.join(", ")),
            None,
        ));
    };
    let value = |arg: &str| -> Option<String> {
        match arguments?.get(arg)? {
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    };
    if let Some(missing) = prompt
        .arguments
        .iter()
        .find(|a| a.required && value(&a.name).is_none())
    {
        return Err(McpError::invalid_params(
            format!("the prompt `{name}` needs the argument `{}`", missing.name),
            None,
        ));
    }
    let messages: Vec<Value> = prompt.messages.iter().map(|m| message(m, &value)).collect();
    let mut result = json!({"resultType": "complete", "messages": messages});
    if let Some(d) = described(prompt) {
        result["description"] = d.into();
    }
    typed(result)
}

fn described(prompt: &McpPromptSpec) -> Option<String> {
    prompt.description.clone()
}

/// One message as MCP writes it.
fn message(m: &McpPromptMessageSpec, value: &dyn Fn(&str) -> Option<String>) -> Value {
    let role = match m.role {
        Some(McpRole::Assistant) => "assistant",
        _ => "user",
    };
    let content = if let Some(text) = &m.text {
        json!({"type": "text", "text": fill(text, value)})
    } else if let Some(image) = &m.image {
        json!({"type": "image", "data": image.data, "mimeType": image.mime_type})
    } else if let Some(audio) = &m.audio {
        json!({"type": "audio", "data": audio.data, "mimeType": audio.mime_type})
    } else if let Some(r) = &m.resource {
        let mime = r.mime_type.clone().unwrap_or_else(|| "text/plain".into());
        let mut resource = json!({"uri": fill(&r.uri, value), "mimeType": mime});
        match (&r.text, &r.blob) {
            (Some(text), _) => resource["text"] = fill(text, value).into(),
            (None, Some(blob)) => resource["blob"] = blob.clone().into(),
            (None, None) => resource["text"] = "".into(),
        }
        json!({"type": "resource", "resource": resource})
    } else {
        json!({"type": "text", "text": ""})
    };
    json!({"role": role, "content": content})
}
