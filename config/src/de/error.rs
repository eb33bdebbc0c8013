//! [`DeError`]: a deserialization error, worded for someone writing YAML
//! (what was found, what was expected) and placed once known.

use std::fmt;

use serde::de;

use crate::error::{Position, one_of};
use crate::tree::FieldPath;

/// A deserialization error, with where it happened once known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeError {
    pub(crate) message: String,
    pub(crate) expected: Option<String>,
    pub(crate) at: Option<Position>,
    pub(crate) path: Option<FieldPath>,
    /// Set for "missing field": the field's name.
    pub(crate) missing: Option<String>,
}

impl DeError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        DeError {
            message: message.into(),
            expected: None,
            at: None,
            path: None,
            missing: None,
        }
    }

    pub(super) fn expecting(mut self, expected: impl fmt::Display) -> Self {
        self.expected = Some(friendly_expected(&expected.to_string()));
        self
    }

    /// An error about an integer wider than 64 bits (a visitor refused it):
    /// serde names it by its Rust type (`integer … as i128`, or as a float
    /// when wider still); say the number as written instead,
    /// and that it is out of range where a number was expected.
    pub(super) fn quoting(mut self, n: &str) -> Self {
        let number_expected = self
            .expected
            .as_deref()
            .is_some_and(|e| e.contains("number"));
        self.message = if number_expected {
            format!("the number {n} is out of range")
        } else {
            format!("wrong type: found the number {n}")
        };
        self
    }

    /// Places the error, unless a deeper node already did.
    pub(super) fn locate(mut self, at: Position, path: &FieldPath) -> Self {
        if self.at.is_none() {
            self.at = Some(at);
            self.path = Some(path.clone());
        }
        self
    }

    /// The field the error is about (for a missing field, the field
    /// itself rather than the mapping that lacks it).
    pub(crate) fn field(&self) -> FieldPath {
        let path = self.path.clone().unwrap_or_default();
        match &self.missing {
            Some(name) => path.key(name.clone()),
            None => path,
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

/// serde's "expected" texts name Rust types; say what to write instead.
fn friendly_expected(text: &str) -> String {
    if text.starts_with("struct ") || text == "a map" {
        return "a mapping".into();
    }
    if let Some(rest) = text.strip_prefix("enum ") {
        return format!("one of the forms of {rest}");
    }
    match text {
        "a string" => "a string".into(),
        "a boolean" => "true or false".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a sequence" => "a list".into(),
        other => other.to_string(),
    }
}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::new(msg.to_string())
    }
    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::new(format!("wrong type: found {}", unexpected(&unexp))).expecting(exp)
    }
    fn invalid_value(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::new(format!("invalid value {}", unexpected(&unexp))).expecting(exp)
    }
    fn invalid_length(len: usize, exp: &dyn de::Expected) -> Self {
        DeError::new(format!("wrong number of items ({len})")).expecting(exp)
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError::new(format!("unknown value `{variant}`")).expecting(one_of(expected))
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError::new(format!("unknown field `{field}`")).expecting(one_of(expected))
    }
    fn missing_field(field: &'static str) -> Self {
        let mut e = DeError::new(format!("missing field `{field}`"));
        e.missing = Some(field.to_string());
        e
    }
    fn duplicate_field(field: &'static str) -> Self {
        DeError::new(format!("field `{field}` given twice"))
    }
}

fn unexpected(u: &de::Unexpected<'_>) -> String {
    match u {
        de::Unexpected::Map => "a mapping".into(),
        de::Unexpected::Seq => "a list".into(),
        de::Unexpected::Unit | de::Unexpected::Option => "nothing (null)".into(),
        de::Unexpected::Str(s) => format!("the string {s:?}"),
        de::Unexpected::Signed(n) => format!("the number {n}"),
        de::Unexpected::Unsigned(n) => format!("the number {n}"),
        de::Unexpected::Float(n) => format!("the number {n}"),
        de::Unexpected::Bool(b) => format!("{b}"),
        other => other.to_string(),
    }
}
