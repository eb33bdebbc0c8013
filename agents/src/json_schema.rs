//! [`SchemaValidator`]: checks JSON values against the subset of JSON
//! Schema that structured output uses.
//!
//! Why hand-written: providers' structured output accepts a small subset of
//! JSON Schema (OpenAI's strict mode: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, `anyOf`, `$ref` into
//! `$defs`, a few bounds), and that subset is a few hundred lines to check,
//! where a full validator crate brings regex engines and URL resolvers.
//!
//! Supported: `type` (one or a list; `integer` is a number without a
//! fraction), `properties`, `required`, `additionalProperties` (boolean or
//! schema), `items`, `prefixItems`, `enum`, `const`, `anyOf`, `oneOf`,
//! `allOf`, `not`, `nullable`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `minLength`, `maxLength`, `minItems`, `maxItems`,
//! `minProperties`, `maxProperties`, and local `$ref`s (`#/...`). Other
//! keywords (`pattern`, `format`, …) are accepted and not checked.

use std::fmt;

use serde_json::Value;

/// How deep validation may go; deeper means a `$ref` cycle that never
/// descends into the value.
const MAX_DEPTH: usize = 128;

/// How many problems a report lists at most.
const MAX_ERRORS: usize = 8;

/// Where a value broke its schema, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaErrors(pub Vec<String>);

impl fmt::Display for SchemaErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl std::error::Error for SchemaErrors {}

/// A schema that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema is neither a JSON object nor a boolean.
    #[error("a schema must be a JSON object, not {0}")]
    NotASchema(String),
    /// A `$ref` does not resolve inside the schema.
    #[error(
        "$ref '{0}' does not point inside the schema (only local references like '#/$defs/x' are supported)"
    )]
    UnresolvedRef(String),
}

/// A compiled JSON schema (of the supported subset).
///
/// ```
/// use serde_json::json;
/// use troupe_agents::SchemaValidator;
///
/// let v = SchemaValidator::new(json!({
///     "type": "object",
///     "properties": {"age": {"type": "integer", "minimum": 0}},
///     "required": ["age"],
///     "additionalProperties": false
/// })).unwrap();
/// assert!(v.validate(&json!({"age": 3})).is_ok());
/// let e = v.validate(&json!({"age": -1.5, "x": 1})).unwrap_err();
/// assert_eq!(e.to_string(), "$.age: expected integer, found number -1.5; $.x: property not allowed");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaValidator {
    root: Value,
}

impl SchemaValidator {
    /// Compiles `schema`: it must be an object (or a boolean) whose `$ref`s
    /// all point inside it.
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError::NotASchema(schema.to_string()));
        }
        check_refs(&schema, &schema)?;
        Ok(SchemaValidator { root: schema })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.root
    }

    /// Checks `value`; the error lists where and how it does not fit.
    pub fn validate(&self, value: &Value) -> Result<(), SchemaErrors> {
        let mut errors = Vec::new();
        self.check(&self.root, value, "$", 0, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            errors.truncate(MAX_ERRORS);
            Err(SchemaErrors(errors))
        }
    }

    fn is_valid(&self, schema: &Value, value: &Value, depth: usize) -> bool {
        let mut errors = Vec::new();
        self.check(schema, value, "$", depth, &mut errors);
        errors.is_empty()
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        depth: usize,
        errors: &mut Vec<String>,
    ) {
        if errors.len() >= MAX_ERRORS {
            return;
        }
        if depth > MAX_DEPTH {
            errors.push(format!("{path}: schema nests too deeply (a $ref cycle?)"));
            return;
        }
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                errors.push(format!("{path}: no value is allowed here"));
                return;
            }
            Value::Object(o) => o,
            _ => return,
        };
        if let Some(Value::String(reference)) = schema.get("$ref") {
            match resolve(&self.root, reference) {
                Some(target) => self.check(target, value, path, depth + 1, errors),
                None => errors.push(format!("{path}: unresolvable $ref {reference}")),
            }
        }

        let nullable = schema.get("nullable") == Some(&Value::Bool(true));
        if value.is_null() && nullable {
            return;
        }
        if let Some(types) = schema.get("type") {
            let allowed: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
                errors.push(format!(
                    "{path}: expected {}, found {}",
                    allowed.join(" or "),
                    describe(value)
                ));
                return;
            }
        }
        if let Some(Value::Array(options)) = schema.get("enum")
            && !options.contains(value)
        {
            errors.push(format!(
                "{path}: {} is not one of {}",
                short(value),
                short(&Value::Array(options.clone()))
            ));
        }
        if let Some(expected) = schema.get("const")
            && expected != value
        {
            errors.push(format!(
                "{path}: expected {}, found {}",
                short(expected),
                short(value)
            ));
        }

        match value {
            Value::Object(object) => self.check_object(schema, object, path, depth, errors),
            Value::Array(items) => self.check_array(schema, items, path, depth, errors),
            Value::String(s) => {
                let len = s.chars().count() as f64;
                bound(
                    schema,
                    "minLength",
                    len,
                    path,
                    "length",
                    |l, b| l >= b,
                    errors,
                );
                bound(
                    schema,
                    "maxLength",
                    len,
                    path,
                    "length",
                    |l, b| l <= b,
                    errors,
                );
            }
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                bound(schema, "minimum", x, path, "value", |x, b| x >= b, errors);
                bound(schema, "maximum", x, path, "value", |x, b| x <= b, errors);
                bound(
                    schema,
                    "exclusiveMinimum",
                    x,
                    path,
                    "value",
                    |x, b| x > b,
                    errors,
                );
                bound(
                    schema,
                    "exclusiveMaximum",
                    x,
                    path,
                    "value",
                    |x, b| x < b,
                    errors,
                );
            }
            _ => {}
        }

        if let Some(Value::Array(all)) = schema.get("allOf") {
            for s in all {
                self.check(s, value, path, depth + 1, errors);
            }
        }
        if let Some(Value::Array(any)) = schema.get("anyOf")
            && !any.iter().any(|s| self.is_valid(s, value, depth + 1))
        {
            errors.push(format!(
                "{path}: {} matches none of the allowed shapes (anyOf)",
                short(value)
            ));
        }
        if let Some(Value::Array(one)) = schema.get("oneOf") {
            let matching = one
                .iter()
                .filter(|s| self.is_valid(s, value, depth + 1))
                .count();
            if matching != 1 {
                errors.push(format!(
                    "{path}: {} matches {matching} of the oneOf shapes, not exactly one",
                    short(value)
                ));
            }
        }
        if let Some(not) = schema.get("not")
            && self.is_valid(not, value, depth + 1)
        {
            errors.push(format!(
                "{path}: {} matches a forbidden shape (not)",
                short(value)
            ));
        }
    }

    fn check_object(
        &self,
        schema: &serde_json::Map<String, Value>,
        object: &serde_json::Map<String, Value>,
        path: &str,
        depth: usize,
        errors: &mut Vec<String>,
    ) {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    errors.push(format!("{path}: missing required property '{name}'"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, v) in object {
            let child = format!("{path}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(s) => self.check(s, v, &child, depth + 1, errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("{child}: property not allowed"))
                    }
                    Some(extra @ Value::Object(_)) => {
                        self.check(extra, v, &child, depth + 1, errors)
                    }
                    _ => {}
                },
            }
        }
        let count = object.len() as f64;
        bound(
            schema,
            "minProperties",
            count,
            path,
            "property count",
            |c, b| c >= b,
            errors,
        );
        bound(
            schema,
            "maxProperties",
            count,
            path,
            "property count",
            |c, b| c <= b,
            errors,
        );
    }

    fn check_array(
        &self,
        schema: &serde_json::Map<String, Value>,
        items: &[Value],
        path: &str,
        depth: usize,
        errors: &mut Vec<String>,
    ) {
        let prefix = match schema.get("prefixItems") {
            Some(Value::Array(p)) => p.as_slice(),
            _ => &[],
        };
        for (i, item) in items.iter().enumerate() {
            let child = format!("{path}[{i}]");
            match prefix.get(i) {
                Some(s) => self.check(s, item, &child, depth + 1, errors),
                None => {
                    if let Some(s) = schema.get("items") {
                        self.check(s, item, &child, depth + 1, errors);
                    }
                }
            }
        }
        let count = items.len() as f64;
        bound(
            schema,
            "minItems",
            count,
            path,
            "item count",
            |c, b| c >= b,
            errors,
        );
        bound(
            schema,
            "maxItems",
            count,
            path,
            "item count",
            |c, b| c <= b,
            errors,
        );
    }
}

/// Reports `what` of `path` if it breaks the numeric bound `keyword`.
fn bound(
    schema: &serde_json::Map<String, Value>,
    keyword: &str,
    actual: f64,
    path: &str,
    what: &str,
    holds: impl Fn(f64, f64) -> bool,
    errors: &mut Vec<String>,
) {
    if let Some(limit) = schema.get(keyword).and_then(Value::as_f64)
        && !holds(actual, limit)
    {
        errors.push(format!("{path}: {what} {actual} breaks {keyword} {limit}"));
    }
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        _ => true, // an unknown type name constrains nothing
    }
}

fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => return "array".into(),
        Value::Object(_) => return "object".into(),
    };
    format!("{kind} {}", short(value))
}

/// A value's JSON, cut short for messages.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(60).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// Follows a local reference (`#`, `#/$defs/x`, with `~0`/`~1` escapes).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// Every `$ref` in `schema` must resolve inside `root`.
fn check_refs(root: &Value, schema: &Value) -> Result<(), SchemaError> {
    match schema {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref")
                && resolve(root, r).is_none()
            {
                return Err(SchemaError::UnresolvedRef(r.clone()));
            }
            o.values().try_for_each(|v| check_refs(root, v))
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_refs(root, v)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, value: Value) -> Vec<String> {
        match SchemaValidator::new(schema).unwrap().validate(&value) {
            Ok(()) => Vec::new(),
            Err(e) => e.0,
        }
    }

    #[test]
    fn nested_objects_arrays_and_refs() {
        let schema = json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
                "status": {"enum": ["ok", "failed"]},
                "note": {"type": ["string", "null"], "maxLength": 5}
            },
            "required": ["items", "status"],
            "$defs": {"item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
        });
        assert!(
            errors(
                schema.clone(),
                json!({"items": [{"n": 1}], "status": "ok", "note": null})
            )
            .is_empty()
        );
        assert!(
            errors(
                schema.clone(),
                json!({"items": [{"n": 2.0}], "status": "ok"})
            )
            .is_empty()
        );
        let mut e = errors(
            schema.clone(),
            json!({"items": [{"n": "one"}, {}], "status": "meh", "note": "too long"}),
        );
        e.sort();
        assert_eq!(
            e,
            vec![
                "$.items[0].n: expected integer, found string \"one\"",
                "$.items[1]: missing required property 'n'",
                "$.note: length 8 breaks maxLength 5",
                "$.status: \"meh\" is not one of [\"ok\",\"failed\"]",
            ]
        );
        let e = errors(schema, json!({"items": [], "status": "ok"}));
        assert_eq!(e, vec!["$.items: item count 0 breaks minItems 1"]);
    }

    #[test]
    fn combinators_and_bounds() {
        let any = json!({"anyOf": [{"type": "string"}, {"type": "number", "minimum": 0}]});
        assert!(errors(any.clone(), json!("x")).is_empty());
        assert!(errors(any.clone(), json!(3)).is_empty());
        assert_eq!(errors(any, json!(-1)).len(), 1);
        let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert_eq!(
            errors(one, json!(1)).len(),
            1,
            "an integer is also a number: two matches"
        );
        assert_eq!(
            errors(json!({"const": 3}), json!(4)),
            vec!["$: expected 3, found 4"]
        );
        assert!(errors(json!({"type": "string", "nullable": true}), json!(null)).is_empty());
        assert_eq!(errors(json!({"exclusiveMaximum": 1}), json!(1)).len(), 1);
        assert_eq!(
            errors(json!({"not": {"type": "null"}}), json!(null)).len(),
            1
        );
        assert!(
            errors(json!({"type": "string", "pattern": "^x$"}), json!("y")).is_empty(),
            "pattern is not checked"
        );
    }

    #[test]
    fn bad_schemas_are_refused_and_cycles_do_not_overflow() {
        assert!(SchemaValidator::new(json!("string")).is_err());
        let e = SchemaValidator::new(json!({"$ref": "http://x/y"})).unwrap_err();
        assert!(e.to_string().contains("local references"), "{e}");
        let cyclic = SchemaValidator::new(json!({"$ref": "#"})).unwrap();
        let e = cyclic.validate(&json!(1)).unwrap_err();
        assert!(e.to_string().contains("too deeply"), "{e}");
    }
}
