//! Elicitation as troupe's human-in-the-loop: an MCP server's request for
//! the user's input (form or URL mode) put as the question the user is
//! asked, and the user's free-text answer put as the elicitation's result.
//!
//! The answer to a form may be a JSON object of its fields, `name=value`
//! pairs (separated by commas or new lines), or — for a form of one field
//! — the bare value; `defaults` takes the form's defaults as they are;
//! `decline` (or `no`) declines and `cancel` cancels. A field the answer
//! leaves out that has a default gets it (SEP-1034).
//! A URL request is accepted by any other answer (`done`, `ok`): the user
//! says they went there.

use serde_json::{Map, Value, json};

/// The question the user is asked for the elicitation `request` (its JSON
/// `params`) of `server`.
pub(super) fn question(server: &str, request: &Value) -> String {
    let message = request["message"].as_str().unwrap_or_default();
    if let Some(url) = request["url"].as_str() {
        return format!(
            "MCP server '{server}' asks you to open {url} : {message} (answer 'done' when finished, or 'decline')"
        );
    }
    let fields: Vec<String> = properties(request)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| {
                    let kind = schema["type"].as_str().unwrap_or("string");
                    let options = schema["enum"]
                        .as_array()
                        .map(|e| {
                            let names: Vec<String> = e
                                .iter()
                                .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
                                .collect();
                            format!(": one of {}", names.join(", "))
                        })
                        .unwrap_or_default();
                    let required = if is_required(request, name) {
                        ", required"
                    } else {
                        ""
                    };
                    let default = schema
                        .get("default")
                        .map(|d| format!(", default {d}"))
                        .unwrap_or_default();
                    format!("{name} ({kind}{required}{options}{default})")
                })
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        format!("MCP server '{server}' asks: {message} (answer, or 'decline')")
    } else {
        format!(
            "MCP server '{server}' asks: {message} [fields: {}] (answer with the value, name=value pairs or a JSON object{}; or 'decline')",
            fields.join("; "),
            if has_defaults(request) {
                ", or 'defaults'"
            } else {
                ""
            }
        )
    }
}

fn has_defaults(request: &Value) -> bool {
    properties(request).is_some_and(|p| p.values().any(|s| s.get("default").is_some()))
}

fn properties(request: &Value) -> Option<&Map<String, Value>> {
    request["requestedSchema"]["properties"].as_object()
}

fn is_required(request: &Value, name: &str) -> bool {
    request["requestedSchema"]["required"]
        .as_array()
        .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)))
}

/// The elicitation result (its JSON) for the user's `answer` to `request`.
pub(super) fn result(request: &Value, answer: &str) -> Value {
    let word = answer.trim().trim_end_matches(['.', '!']).to_lowercase();
    match word.as_str() {
        "decline" | "declined" | "no" => return json!({"action": "decline"}),
        "cancel" | "cancelled" => return json!({"action": "cancel"}),
        _ => {}
    }
    if request["url"].is_string() {
        return json!({"action": "accept"});
    }
    let mut content = if word == "defaults" {
        Map::new()
    } else {
        content(request, answer.trim())
    };
    for (name, schema) in properties(request).into_iter().flatten() {
        if let Some(default) = schema.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
    json!({"action": "accept", "content": content})
}

/// The form's content from the answer.
fn content(request: &Value, answer: &str) -> Map<String, Value> {
    let empty = Map::new();
    let props = properties(request).unwrap_or(&empty);
    if let Ok(Value::Object(given)) = serde_json::from_str::<Value>(answer) {
        let mut out = Map::new();
        for (name, value) in given {
            let typed = match (props.get(&name), &value) {
                (Some(schema), Value::String(s)) => typed(schema, s),
                _ => value,
            };
            out.insert(name, typed);
        }
        return out;
    }
    let pairs: Vec<(&str, &str)> = answer
        .split([',', '\n'])
        .filter_map(|part| part.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| props.contains_key(*k))
        .collect();
    if !pairs.is_empty() {
        let mut out = Map::new();
        for (name, value) in pairs {
            out.insert(name.to_string(), typed(&props[name], value));
        }
        return out;
    }
    // One field (or the first required one): the bare answer is its value.
    let field = if props.len() == 1 {
        props.iter().next()
    } else {
        props.iter().find(|(name, _)| is_required(request, name))
    };
    let mut out = Map::new();
    if let Some((name, schema)) = field {
        out.insert(name.clone(), typed(schema, answer));
    }
    out
}

/// `text` as the field's type says: a number, an integer, a boolean, or
/// the text itself.
fn typed(schema: &Value, text: &str) -> Value {
    match schema["type"].as_str() {
        Some("integer") => text
            .parse::<i64>()
            .map_or_else(|_| Value::String(text.into()), Value::from),
        Some("number") => text
            .parse::<f64>()
            .map_or_else(|_| Value::String(text.into()), Value::from),
        Some("boolean") => {
            let word = text.to_lowercase();
            Value::Bool(matches!(word.as_str(), "true" | "yes" | "y" | "ok" | "1"))
        }
        _ => Value::String(text.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({"mode": "form", "message": "Who?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"]}})
    }

    #[test]
    fn answers_become_form_content() {
        assert_eq!(
            result(&form(), "Ada"),
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!(
            result(&form(), "name=Ada, age=36"),
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}})
        );
        assert_eq!(
            result(&form(), r#"{"name": "Ada", "age": "36"}"#),
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}})
        );
        assert_eq!(result(&form(), "Decline."), json!({"action": "decline"}));
        let defaults = json!({"mode": "form", "message": "Ok?", "requestedSchema": {"type": "object",
            "properties": {"n": {"type": "integer", "default": 30}, "s": {"type": "string", "default": "x"}}}});
        assert_eq!(
            result(&defaults, "defaults"),
            json!({"action": "accept", "content": {"n": 30, "s": "x"}})
        );
        assert_eq!(
            result(&defaults, "s=y"),
            json!({"action": "accept", "content": {"n": 30, "s": "y"}})
        );
        assert!(question("d", &defaults).contains("n (integer, default 30)"));
        assert_eq!(result(&form(), "cancel"), json!({"action": "cancel"}));
    }

    #[test]
    fn questions_name_the_fields_and_the_url() {
        let q = question("people", &form());
        assert!(
            q.contains("Who?") && q.contains("name (string, required)"),
            "{q}"
        );
        assert!(q.contains("age (integer)"), "{q}");
        let url = json!({"mode": "url", "message": "Sign in", "url": "https://x.test/a"});
        let q = question("auth", &url);
        assert!(
            q.contains("https://x.test/a") && q.contains("Sign in"),
            "{q}"
        );
        assert_eq!(result(&url, "done"), json!({"action": "accept"}));
        assert_eq!(result(&url, "no"), json!({"action": "decline"}));
    }
}
