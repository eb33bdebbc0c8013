//! A message's parts as the team reads them, and the team's answer as an
//! artifact's parts. In: text as it is; structured `data` as its JSON; a
//! file by URL as a line naming it; a file's bytes (`raw`, base64) as its
//! text when it is text (a `text/*`, JSON, XML or YAML media type, and
//! UTF-8), else as a line naming it and its size — the team's models read
//! text. Out: the answer as a text part, and, when it is a JSON object or
//! array, the same as a `data` part after it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use troupe::agents::a2a::types::Part;

use super::envelope::RpcError;

/// Whether `media` names text a model can read.
fn is_text(media: &str) -> bool {
    let media = media.split(';').next().unwrap_or("").trim();
    media.starts_with("text/")
        || matches!(
            media,
            "application/json" | "application/xml" | "application/yaml" | "application/x-yaml"
        )
        || media.ends_with("+json")
        || media.ends_with("+xml")
}

/// How a file part is named in the task's text.
fn label(part: &Part) -> String {
    let name = part
        .filename
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("unnamed");
    match part.media_type.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => format!("{name} ({m})"),
        None => name.to_string(),
    }
}

/// The text of `parts` for the team, joined by blank lines; -32602 for
/// bytes that are not base64.
pub(crate) fn task_text(parts: &[Part]) -> Result<String, RpcError> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if let Some(text) = &part.text {
            out.push(text.clone());
        } else if let Some(data) = &part.data {
            out.push(serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string()));
        } else if let Some(url) = &part.url {
            out.push(format!("[file {} at {url}]", label(part)));
        } else if let Some(raw) = &part.raw {
            let bytes = STANDARD.decode(raw.trim()).map_err(|e| {
                RpcError::params(format!("`message.parts[{i}].raw` is not base64: {e}"))
            })?;
            let media = part.media_type.as_deref().unwrap_or("text/plain");
            match String::from_utf8(bytes) {
                Ok(text) if is_text(media) => out.push(format!("[file {}]\n{text}", label(part))),
                Ok(text) => out.push(format!(
                    "[file {}: {} bytes, not text]",
                    label(part),
                    text.len()
                )),
                Err(e) => out.push(format!(
                    "[file {}: {} bytes, not text]",
                    label(part),
                    e.as_bytes().len()
                )),
            }
        }
    }
    Ok(out.join("\n\n"))
}

/// The parts of an artifact holding the answer `text`: the text, and the
/// same as data when it is a JSON object or array.
pub(crate) fn answer_parts(text: String) -> Vec<Part> {
    let data = match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
        _ => None,
    };
    let mut parts = vec![Part::text(text)];
    if let Some(data) = data {
        parts.push(Part {
            data: Some(data),
            media_type: Some("application/json".into()),
            ..Part::default()
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn files_and_data_become_text_and_json_answers_data() {
        let parts = vec![
            Part::text("Summarise these."),
            Part {
                data: Some(json!({"order": 42})),
                ..Part::default()
            },
            Part {
                raw: Some(STANDARD.encode("line one\nline two")),
                filename: Some("notes.txt".into()),
                media_type: Some("text/plain".into()),
                ..Part::default()
            },
            Part {
                raw: Some(STANDARD.encode([0u8, 159, 146, 150])),
                filename: Some("blob.bin".into()),
                media_type: Some("application/octet-stream".into()),
                ..Part::default()
            },
            Part {
                url: Some("https://example.com/a.pdf".into()),
                ..Part::default()
            },
        ];
        let text = task_text(&parts).unwrap();
        assert!(text.contains("\"order\": 42"), "{text}");
        assert!(
            text.contains("[file notes.txt (text/plain)]\nline one\nline two"),
            "{text}"
        );
        assert!(
            text.contains("[file blob.bin (application/octet-stream): 4 bytes, not text]"),
            "{text}"
        );
        assert!(
            text.contains("[file unnamed at https://example.com/a.pdf]"),
            "{text}"
        );
        let bad = vec![Part {
            raw: Some("!!".into()),
            ..Part::default()
        }];
        assert_eq!(task_text(&bad).unwrap_err().code, -32602);
        assert_eq!(answer_parts("plain".into()).len(), 1);
        let json_answer = answer_parts("{\"ok\": true}".into());
        assert_eq!(json_answer[1].data, Some(json!({"ok": true})));
    }
}
