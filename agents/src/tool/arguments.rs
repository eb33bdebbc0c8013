//! A tool call's arguments as the model wrote them: read as JSON, and
//! what is wrong with them said in the model's terms — JSON kinds, never
//! the Rust types the arguments are read into.

use crate::error::ToolError;

/// The arguments as a JSON value; empty text counts as `{}` (some models
/// send nothing for a call without arguments).
pub(crate) fn parse_arguments(tool: &str, arguments: &str) -> Result<serde_json::Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(arguments).map_err(|e| ToolError::InvalidArguments {
        tool: tool.to_string(),
        message: format!("the arguments are not valid JSON ({e})"),
    })
}

/// The arguments of `tool` did not fit its parameters: serde's error in
/// the model's terms (see [`readable`]).
pub(crate) fn invalid_arguments(tool: &str, e: &serde_json::Error) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_string(),
        message: readable(&e.to_string()),
    }
}

/// A serde message with the Rust types it names put as JSON kinds:
/// `expected struct Add` → `expected an object`, `expected u32` →
/// `expected a non-negative integer`, `expected f64` → `expected a number`.
pub(crate) fn readable(message: &str) -> String {
    if message.starts_with("data did not match any variant of untagged enum") {
        return "the value matches none of the allowed forms".into();
    }
    const MARK: &str = "expected ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(MARK) {
        let (before, after) = rest.split_at(i + MARK.len());
        out.push_str(before);
        let (plain, consumed) = plain_kind(after);
        out.push_str(plain);
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

/// What `after` (the text following `expected `) names, in JSON terms,
/// and how much of it that replaces: ("", 0) when it names no Rust type.
fn plain_kind(after: &str) -> (&'static str, usize) {
    // A kind followed by a Rust type's name (longest kinds first).
    const NAMED: &[(&str, &str)] = &[
        ("struct variant ", "an object"),
        ("tuple variant ", "an array"),
        ("newtype variant ", "a value"),
        ("unit variant ", "a name"),
        ("tuple struct ", "an array"),
        ("newtype struct ", "a value"),
        ("unit struct ", "null"),
        ("struct ", "an object"),
        ("enum ", "one of the allowed values"),
    ];
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (kind, plain) in NAMED {
        if let Some(name) = after.strip_prefix(kind) {
            let len = name.find(|c: char| !is_name(c)).unwrap_or(name.len());
            return (plain, kind.len() + len);
        }
    }
    let len = after
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(after.len());
    let plain = match &after[..len] {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a non-negative integer",
        "f32" | "f64" => "a number",
        "char" => "a single character",
        _ => return ("", 0),
    };
    (plain, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arguments_are_an_empty_object() {
        assert_eq!(parse_arguments("t", " ").unwrap(), serde_json::json!({}));
        let e = parse_arguments("t", "{oops").unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
    }

    #[test]
    fn rust_types_become_json_kinds() {
        assert_eq!(
            readable("invalid type: string \"two\", expected i64"),
            "invalid type: string \"two\", expected an integer"
        );
        assert_eq!(
            readable("invalid type: string \"x\", expected struct AddArgs"),
            "invalid type: string \"x\", expected an object"
        );
        assert_eq!(
            readable("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a non-negative integer"
        );
        assert_eq!(
            readable("invalid type: map, expected enum Color at line 1"),
            "invalid type: map, expected one of the allowed values at line 1"
        );
        assert_eq!(
            readable("missing field `a`, expected a string"),
            "missing field `a`, expected a string"
        );
        assert_eq!(
            readable("data did not match any variant of untagged enum Shape"),
            "the value matches none of the allowed forms"
        );
    }
}
