//! [`SchemaValidator`]: checks JSON values against a JSON Schema, with the
//! [`jsonschema`] crate.
//!
//! Every draft from 4 to 2020-12 (chosen by the schema's `$schema`;
//! 2020-12 without one). References must point inside the schema: remote
//! resolving is left out of the build (structured-output schemas are
//! self-contained, and it would bring a second HTTP stack). One extension
//! is kept from OpenAPI, which models often see: `"nullable": true` beside
//! a `type` also allows `null`.
//!
//! What the model is shown when its answer does not fit: each problem as
//! the place in the answer (`$.items[0].n`) and what is wrong there, at
//! most [`MAX_ERRORS`] of them.

use std::fmt;

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::Location;
use jsonschema::{ReferencingError, ValidationError, Validator};
use serde_json::Value;

/// How many problems a report lists at most.
const MAX_ERRORS: usize = 8;

/// Where a value broke its schema, and how: one `path: problem` text each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaErrors(pub Vec<String>);

impl fmt::Display for SchemaErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl std::error::Error for SchemaErrors {}

/// A schema that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema is neither a JSON object nor a boolean.
    #[error("a schema must be a JSON object, not {0}")]
    NotASchema(String),
    /// A `$ref` does not resolve inside the schema.
    #[error(
        "$ref '{reference}' does not point inside the schema (only local references like '#/$defs/x' are supported)"
    )]
    UnresolvedRef {
        /// The reference.
        reference: String,
        /// What the validator said.
        source: Box<ValidationError<'static>>,
    },
    /// The schema breaks the rules of its draft (a bad `type`, a negative
    /// `minLength`, …).
    #[error("{source} (at '{path}' in the schema)")]
    Invalid {
        /// Where in the schema, as a JSON pointer.
        path: String,
        /// What the validator said.
        source: Box<ValidationError<'static>>,
    },
}

/// A compiled JSON schema.
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
/// assert_eq!(
///     e.to_string(),
///     "$.age: -1.5 is not of type \"integer\"; \
///      $.age: -1.5 is less than the minimum of 0; \
///      $: Additional properties are not allowed ('x' was unexpected)"
/// );
/// ```
#[derive(Clone)]
pub struct SchemaValidator {
    root: Value,
    compiled: Validator,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("schema", &self.root)
            .finish()
    }
}

/// Two validators are equal when their schemas are.
impl PartialEq for SchemaValidator {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl SchemaValidator {
    /// Compiles `schema`: it must be an object (or a boolean) that is valid
    /// under its draft, and whose `$ref`s all point inside it.
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError::NotASchema(schema.to_string()));
        }
        let compiled = jsonschema::options()
            .build(&with_nullable(&schema))
            .map_err(compile_error)?;
        Ok(SchemaValidator {
            root: schema,
            compiled,
        })
    }

    /// The schema, as given.
    pub fn schema(&self) -> &Value {
        &self.root
    }

    /// Checks `value`; the error lists where and how it does not fit.
    pub fn validate(&self, value: &Value) -> Result<(), SchemaErrors> {
        let errors: Vec<String> = self
            .compiled
            .iter_errors(value)
            .take(MAX_ERRORS)
            .map(|e| format!("{}: {e}", instance_path(value, e.instance_path())))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SchemaErrors(errors))
        }
    }
}

fn compile_error(error: ValidationError<'static>) -> SchemaError {
    let reference = match error.kind() {
        ValidationErrorKind::Referencing(ReferencingError::Unretrievable { uri, .. }) => {
            Some(uri.clone())
        }
        ValidationErrorKind::Referencing(ReferencingError::PointerToNowhere { pointer }) => {
            Some(format!("#{pointer}"))
        }
        ValidationErrorKind::Referencing(other) => Some(other.to_string()),
        _ => None,
    };
    match reference {
        Some(reference) => SchemaError::UnresolvedRef {
            reference,
            source: Box::new(error),
        },
        None => SchemaError::Invalid {
            path: error.instance_path().to_string(),
            source: Box::new(error),
        },
    }
}

/// A place in `value` as the model reads it: `$`, `$.items[0].n`,
/// `$["a key"]`. Walking the value tells array indexes from object keys
/// that happen to be digits.
fn instance_path(value: &Value, location: &Location) -> String {
    let mut path = String::from("$");
    let mut at = Some(value);
    for segment in location.segments() {
        let segment = segment.to_string();
        match at {
            Some(Value::Array(items)) => {
                path.push_str(&format!("[{segment}]"));
                at = segment.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            other => {
                if is_identifier(&segment) {
                    path.push('.');
                    path.push_str(&segment);
                } else {
                    path.push_str(&format!("[{}]", Value::String(segment.clone())));
                }
                at = other.and_then(|v| v.get(&segment));
            }
        }
    }
    path
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Keywords whose value is a subschema.
const SUBSCHEMA: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of subschemas.
const SUBSCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAPS: &[&str] = &[
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

/// `schema` with OpenAPI's `"nullable": true` spelled in JSON Schema: `null`
/// added to the `type` beside it, in every subschema. Walks the schema with
/// a stack (no recursion), and only where subschemas are (a `const` or an
/// `enum` holding such an object is data, and left alone).
fn with_nullable(schema: &Value) -> Value {
    let mut out = schema.clone();
    let mut todo: Vec<&mut Value> = vec![&mut out];
    while let Some(node) = todo.pop() {
        let Value::Object(o) = node else { continue };
        if o.get("nullable") == Some(&Value::Bool(true)) {
            match o.get_mut("type") {
                Some(Value::String(t)) if t != "null" => {
                    let t = std::mem::take(t);
                    o.insert("type".into(), serde_json::json!([t, "null"]));
                }
                Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                    types.push(Value::from("null"));
                }
                _ => {}
            }
        }
        for (key, value) in o.iter_mut() {
            let key = key.as_str();
            if SUBSCHEMA.contains(&key) && value.is_object() {
                todo.push(value);
            } else if let Value::Object(map) = value {
                if SUBSCHEMA_MAPS.contains(&key) {
                    todo.extend(map.values_mut());
                }
            } else if let Value::Array(list) = value
                && SUBSCHEMA_LISTS.contains(&key)
            {
                todo.extend(list.iter_mut());
            }
        }
    }
    out
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
                "$.items[0].n: \"one\" is not of type \"integer\"",
                "$.items[1]: \"n\" is a required property",
                "$.note: \"too long\" is longer than 5 characters",
                "$.status: \"meh\" is not one of \"ok\" or \"failed\"",
            ]
        );
        let e = errors(schema, json!({"items": [], "status": "ok"}));
        assert_eq!(e, vec!["$.items: [] has less than 1 item"]);
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
            vec!["$: 3 was expected"]
        );
        assert!(errors(json!({"type": "string", "nullable": true}), json!(null)).is_empty());
        assert_eq!(errors(json!({"exclusiveMaximum": 1}), json!(1)).len(), 1);
        assert_eq!(
            errors(json!({"not": {"type": "null"}}), json!(null)).len(),
            1
        );
        assert_eq!(
            errors(json!({"type": "string", "pattern": "^x$"}), json!("y")),
            vec!["$: \"y\" does not match \"^x$\""],
            "patterns are checked now"
        );
    }

    #[test]
    fn paths_tell_indexes_from_keys() {
        let schema = json!({
            "properties": {
                "a b": {"type": "string"},
                "0": {"items": {"type": "string"}}
            }
        });
        let mut e = errors(schema, json!({"a b": 1, "0": [true]}));
        e.sort();
        assert_eq!(
            e,
            [
                "$[\"0\"][0]: true is not of type \"string\"",
                "$[\"a b\"]: 1 is not of type \"string\"",
            ]
        );
    }

    #[test]
    fn nullable_is_honoured_only_where_subschemas_are() {
        let schema = json!({
            "properties": {
                "n": {"type": "integer", "nullable": true},
                "tags": {"type": "array", "items": {"type": "string", "nullable": true}},
                "c": {"const": {"type": "string", "nullable": true}}
            }
        });
        assert!(errors(schema.clone(), json!({"n": null, "tags": ["x", null]})).is_empty());
        let e = errors(
            schema.clone(),
            json!({"c": {"type": ["string", "null"], "nullable": true}}),
        );
        assert_eq!(e.len(), 1, "a const is data: {e:?}");
        // The schema is given back as it came.
        let v = SchemaValidator::new(schema.clone()).unwrap();
        assert_eq!(v.schema(), &schema);
    }

    #[test]
    fn drafts_are_taken_from_the_schema() {
        // Draft 4: exclusiveMaximum is a flag on maximum.
        let draft4 = json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "maximum": 1,
            "exclusiveMaximum": true
        });
        assert_eq!(errors(draft4, json!(1)).len(), 1);
        assert!(errors(json!({"maximum": 1}), json!(1)).is_empty());
    }

    #[test]
    fn bad_schemas_are_refused_and_cycles_do_not_overflow() {
        assert!(matches!(
            SchemaValidator::new(json!("string")),
            Err(SchemaError::NotASchema(_))
        ));
        let e = SchemaValidator::new(json!({"$ref": "http://x/y"})).unwrap_err();
        assert!(e.to_string().contains("local references"), "{e}");
        assert!(
            matches!(&e, SchemaError::UnresolvedRef { reference, .. } if reference == "http://x/y")
        );
        let e = SchemaValidator::new(json!({"$ref": "#/$defs/missing"})).unwrap_err();
        assert!(
            matches!(&e, SchemaError::UnresolvedRef { reference, .. } if reference == "#/$defs/missing"),
            "{e}"
        );
        let e = SchemaValidator::new(json!({"type": "bogus"})).unwrap_err();
        assert!(
            matches!(&e, SchemaError::Invalid { path, .. } if path == "/type"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
        let cyclic = SchemaValidator::new(json!({"$ref": "#"})).unwrap();
        assert!(cyclic.validate(&json!(1)).is_ok());
        let looping = SchemaValidator::new(json!({
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            "$ref": "#/$defs/a"
        }));
        if let Ok(v) = looping {
            assert!(v.validate(&json!(1)).is_ok());
        }
    }
}
