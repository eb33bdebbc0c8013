//! [`Expr`]: a condition over a step's output, `{{ ref }}`, `!{{ ref }}`,
//! `{{ ref }} == value` or `{{ ref }} != value`.

use std::fmt;

use serde_json::Value;

use super::board::{Board, text_of};
use super::reference::{Reference, TemplateError, err, parse_reference};

/// How a condition expression compares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    Truthy,
    Equals(String),
    NotEquals(String),
}

/// A condition expression: `{{ ref }}`, `!{{ ref }}`, `{{ ref }} == v`,
/// `{{ ref }} != v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    negate: bool,
    reference: Reference,
    test: Test,
}

impl Expr {
    /// Parses an expression.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut s = text.trim();
        let mut negate = false;
        if let Some(rest) = s.strip_prefix('!') {
            negate = true;
            s = rest.trim_start();
        } else if let Some(rest) = s.strip_prefix("not ") {
            negate = true;
            s = rest.trim_start();
        }
        let Some(inner) = s.strip_prefix("{{") else {
            return err(format!(
                "`{text}` is not a condition expression (expected `{{{{ $steps.<id>.output… }}}}`, optionally followed by `== value` or `!= value`)"
            ));
        };
        let Some(close) = inner.find("}}") else {
            return err("`{{` without a closing `}}`");
        };
        let reference = parse_reference(&inner[..close])?;
        let tail = inner[close + 2..].trim();
        // `== value`, `!= value`: a value that is missing or starts with
        // `=` (`===`, `!==`) is a typo, not a comparison with `=`.
        let value = |v: &str| -> Result<String, TemplateError> {
            let v = v.trim();
            if v.is_empty() || v.starts_with('=') {
                err(format!(
                    "`{tail}` after the reference: no value to compare with (expected `== value` or `!= value`; `== ''` for the empty text)"
                ))
            } else {
                Ok(unquote(v))
            }
        };
        let test = if tail.is_empty() {
            Test::Truthy
        } else if let Some(v) = tail.strip_prefix("==") {
            Test::Equals(value(v)?)
        } else if let Some(v) = tail.strip_prefix("!=") {
            Test::NotEquals(value(v)?)
        } else {
            return err(format!(
                "unexpected `{tail}` after the reference (expected `== value` or `!= value`)"
            ));
        };
        Ok(Expr {
            negate,
            reference,
            test,
        })
    }

    /// The reference it reads.
    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// Evaluates the expression against what the steps produced.
    pub fn evaluate(&self, board: &Board<'_>) -> bool {
        let value = board.resolve(&self.reference);
        let result = match &self.test {
            Test::Truthy => value.as_ref().is_some_and(truthy),
            Test::Equals(v) => value.as_ref().is_some_and(|x| equals(x, v)),
            Test::NotEquals(v) => !value.as_ref().is_some_and(|x| equals(x, v)),
        };
        result != self.negate
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negate {
            f.write_str("!")?;
        }
        write!(f, "{{{{ {} }}}}", self.reference)?;
        match &self.test {
            Test::Truthy => Ok(()),
            Test::Equals(v) => write!(f, " == {v}"),
            Test::NotEquals(v) => write!(f, " != {v}"),
        }
    }
}

fn unquote(s: &str) -> String {
    let t = s.trim();
    if t.len() >= 2
        && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\'')))
    {
        t[1..t.len() - 1].to_string()
    } else {
        t.to_string()
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => matches!(s.trim().to_lowercase().as_str(), "true" | "yes" | "1"),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn equals(v: &Value, expected: &str) -> bool {
    text_of(v).trim() == expected.trim()
}
