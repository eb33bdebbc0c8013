//! [`StructuredOutput`]: a JSON schema an agent's answer must match, how it
//! is asked of the model, and how the answer is checked.

use schemars::JsonSchema;
use serde_json::Value;

use crate::json_schema::{SchemaError, SchemaErrors, SchemaValidator};
use crate::model::ResponseFormat;
use crate::tool::sanitize_tool_name;

/// The JSON shape an agent's final answer must have.
///
/// The model is asked for it through `response_format` (strict when the
/// schema allows it: every object closed and all its properties required);
/// the answer is then parsed — leniently about a surrounding Markdown code
/// fence — and validated with [`SchemaValidator`] before it is returned.
///
/// ```
/// use serde_json::json;
/// use troupe_agents::StructuredOutput;
///
/// let out = StructuredOutput::new(json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}},
///     "required": ["city"],
///     "additionalProperties": false
/// })).unwrap();
/// assert_eq!(out.parse("```json\n{\"city\": \"Oslo\"}\n```").unwrap(), "{\"city\":\"Oslo\"}");
/// let wrong = out.parse("{\"town\": \"Oslo\"}").unwrap_err();
/// assert!(wrong.to_string().contains("$: \"city\" is a required property"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput {
    name: String,
    validator: SchemaValidator,
    strict: bool,
}

impl StructuredOutput {
    /// Output matching `schema`, named after its `title` (or `output`).
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .map(sanitize_tool_name)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "output".to_string());
        Self::build(name, schema)
    }

    /// The output's name (its schema's `title`, or `output`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Output matching `schema`, with this name (providers want one).
    pub fn named(name: impl Into<String>, schema: Value) -> Result<Self, SchemaError> {
        Self::build(name.into(), schema)
    }

    /// Output of Rust type `T` (its schema derived with schemars).
    pub fn of<T: JsonSchema>() -> Result<Self, SchemaError> {
        Self::build(
            T::schema_name().into_owned(),
            crate::tool::schema_for::<T>(),
        )
    }

    fn build(name: String, schema: Value) -> Result<Self, SchemaError> {
        let strict = strict_compatible(&schema);
        Ok(StructuredOutput {
            name: sanitize_tool_name(&name),
            validator: SchemaValidator::new(schema)?,
            strict,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        self.validator.schema()
    }

    /// The `response_format` asking the model for this output.
    pub fn response_format(&self) -> ResponseFormat {
        ResponseFormat::JsonSchema {
            name: self.name.clone(),
            schema: self.schema().clone(),
            strict: self.strict,
        }
    }

    /// Parses and validates a model's answer; returns it as compact JSON
    /// text, or says what is wrong with it (the error's text is what the
    /// model is shown when it is asked again).
    pub fn parse(&self, text: &str) -> Result<String, AnswerRejected> {
        let json = strip_code_fence(text);
        let value: Value = serde_json::from_str(json).map_err(AnswerRejected::NotJson)?;
        self.validator
            .validate(&value)
            .map_err(AnswerRejected::Mismatch)?;
        Ok(value.to_string())
    }
}

/// Why a model's answer is not the structured output asked for.
#[derive(Debug, thiserror::Error)]
pub enum AnswerRejected {
    /// The answer does not parse as JSON.
    #[error("the answer is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// The answer is JSON but does not match the schema.
    #[error("the answer does not match the schema: {0}")]
    Mismatch(#[source] SchemaErrors),
}

/// The text inside a Markdown code fence, if the whole answer is one.
fn strip_code_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    match body.split_once('\n') {
        Some((_, inner)) => inner.trim(),
        None => body.trim(),
    }
}

/// Whether OpenAI's strict mode accepts the schema: every object schema
/// lists all its properties as required and forbids others.
fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(o) => {
            let is_object = o.get("type").and_then(Value::as_str) == Some("object")
                || o.contains_key("properties");
            if is_object {
                let closed = o.get("additionalProperties") == Some(&Value::Bool(false));
                let props: Vec<&String> = o
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().collect())
                    .unwrap_or_default();
                let required: Vec<&str> = o
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !closed || !props.iter().all(|p| required.contains(&p.as_str())) {
                    return false;
                }
            }
            o.values().all(strict_compatible)
        }
        Value::Array(a) => a.iter().all(strict_compatible),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strictness_is_inferred() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false});
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let partly = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a"], "additionalProperties": false});
        assert!(strict_compatible(&closed));
        assert!(!strict_compatible(&open));
        assert!(!strict_compatible(&partly));
        match StructuredOutput::new(open).unwrap().response_format() {
            ResponseFormat::JsonSchema { name, strict, .. } => {
                assert_eq!(name, "output");
                assert!(!strict);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fences_and_garbage() {
        assert_eq!(strip_code_fence("```json\n{}\n```"), "{}");
        assert_eq!(strip_code_fence("```{}```"), "{}");
        assert_eq!(strip_code_fence(" {} "), "{}");
        let out = StructuredOutput::new(json!({"type": "object"})).unwrap();
        let err = out.parse("Sure! Here it is").unwrap_err();
        assert!(matches!(err, AnswerRejected::NotJson(_)), "{err:?}");
        assert!(err.to_string().contains("not JSON"), "{err}");
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Verdict {
        ok: bool,
    }

    #[test]
    fn from_a_rust_type() {
        let out = StructuredOutput::of::<Verdict>().unwrap();
        assert!(out.parse("{\"ok\": true}").is_ok());
        assert!(out.parse("{\"ok\": 1}").is_err());
    }
}
