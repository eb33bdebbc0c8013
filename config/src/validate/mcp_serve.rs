//! `serve: {mcp: …}`: the tool's input schema is an object schema; each
//! resource and prompt message says exactly one content; URIs and prompt
//! names are unique; every `{name}` a prompt or template writes is one of
//! its arguments or variables.

use std::collections::BTreeSet;

use super::checker::{Checker, p};
use crate::schema::{McpPromptSpec, McpResourceTemplateSpec, McpServeSpec};
use crate::tree::FieldPath;

/// Checks the MCP section of `serve:`.
pub(super) fn check_mcp_serve(c: &mut Checker<'_>, s: &McpServeSpec) {
    let base = p(&["serve", "mcp"]);
    if let Some(schema) = s.tool.as_ref().and_then(|t| t.input_schema.as_ref()) {
        let at = base.key("tool").key("input_schema");
        let object = schema
            .get("type")
            .is_none_or(|t| t == &serde_json::Value::from("object"));
        if !schema.is_object() || !object {
            c.value_error(
                &at,
                "a tool's input schema must be a JSON Schema of an object",
                Some("`{type: object, properties: {…}}`".into()),
            );
        }
    }
    let mut uris = BTreeSet::new();
    for (i, r) in s.resources.iter().enumerate() {
        let at = base.key("resources").index(i);
        let given = [r.text.is_some(), r.blob.is_some(), r.file.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            c.error(
                &at,
                format!("the resource `{}` needs exactly one content", r.uri),
                Some("one of `text`, `blob` (base64), `file`".into()),
            );
        }
        if !uris.insert(r.uri.clone()) {
            c.value_error(
                &at.key("uri"),
                format!("the resource `{}` is declared twice", r.uri),
                None,
            );
        }
    }
    for (i, t) in s.resource_templates.iter().enumerate() {
        check_template(c, &base.key("resource_templates").index(i), t);
    }
    let mut names = BTreeSet::new();
    for (i, prompt) in s.prompts.iter().enumerate() {
        let at = base.key("prompts").index(i);
        if !names.insert(prompt.name.clone()) {
            c.value_error(
                &at.key("name"),
                format!("the prompt `{}` is declared twice", prompt.name),
                None,
            );
        }
        check_prompt(c, &at, prompt);
    }
}

/// The `{name}` placeholders in `text`, or the first unclosed brace's
/// offset.
fn placeholders(text: &str) -> Result<Vec<&str>, usize> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(offset + open);
        };
        out.push(&rest[open + 1..open + close]);
        offset += open + close + 1;
        rest = &rest[open + close + 1..];
    }
    Ok(out)
}

fn check_template(c: &mut Checker<'_>, at: &FieldPath, t: &McpResourceTemplateSpec) {
    let vars = match placeholders(&t.uri_template) {
        Ok(v) if !v.is_empty() && v.iter().all(|n| is_name(n)) => v,
        _ => {
            c.value_error(
                &at.key("uri_template"),
                format!("`{}` is not a URI template with variables", t.uri_template),
                Some("a URI with `{name}` parts, e.g. `notes://{id}/text`".into()),
            );
            return;
        }
    };
    for (field, names) in [
        ("text", placeholders(&t.text).unwrap_or_default()),
        ("complete", t.complete.keys().map(String::as_str).collect()),
    ] {
        for name in names.into_iter().filter(|n| is_name(n)) {
            if !vars.contains(&name) {
                c.value_error(
                    &at.key(field),
                    format!("`{name}` is no variable of `{}`", t.uri_template),
                    Some(vars.join(", ")),
                );
            }
        }
    }
}

fn check_prompt(c: &mut Checker<'_>, at: &FieldPath, prompt: &McpPromptSpec) {
    let args: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    if prompt.messages.is_empty() {
        c.error(
            &at.key("messages"),
            format!("the prompt `{}` has no messages", prompt.name),
            Some("at least one message".into()),
        );
    }
    for (i, m) in prompt.messages.iter().enumerate() {
        let here = at.key("messages").index(i);
        let given = [
            m.text.is_some(),
            m.image.is_some(),
            m.audio.is_some(),
            m.resource.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            c.error(
                &here,
                "a prompt message needs exactly one content",
                Some("one of `text`, `image`, `audio`, `resource`".into()),
            );
        }
        let texts = [
            ("text", m.text.as_deref()),
            ("resource", m.resource.as_ref().map(|r| r.uri.as_str())),
            (
                "resource",
                m.resource.as_ref().and_then(|r| r.text.as_deref()),
            ),
        ];
        for (field, text) in texts {
            let Some(text) = text else { continue };
            for name in placeholders(text).unwrap_or_default() {
                if is_name(name) && !args.contains(&name) {
                    c.value_error(
                        &here.key(field),
                        format!("`{{{name}}}` names no argument of `{}`", prompt.name),
                        Some(if args.is_empty() {
                            "an `arguments:` entry with that name".into()
                        } else {
                            args.join(", ")
                        }),
                    );
                }
            }
        }
    }
}

/// Whether `s` reads as a placeholder's name (so JSON braces in a text
/// are left alone).
fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
