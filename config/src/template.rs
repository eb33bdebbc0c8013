//! `{{ $steps.<id>.output }}` templates: references to what earlier steps
//! produced, usable in agent instructions and in conditions (as cagent
//! writes them).
//!
//! A reference names a step (or graph node, or team participant) and a
//! path into what it produced:
//!
//! | reference | is |
//! |---|---|
//! | `$steps.draft.output` | the step's last output (its text) |
//! | `$steps.qa.output.approved` | a field of that output read as JSON |
//! | `$steps.qa.output.items[0]` | an element of a JSON list |
//! | `$steps.qa.agent` | the agent that ran the step |
//! | `$steps.research.outputs.web.output` | the output of step `web` inside parallel block `research` |
//! | `$steps.research.outputs[1].output` | the second step of the block, in the order written |
//! | `$steps.research.output` | the block as JSON: `{"steps": {id: {"output", "agent"}}, "order": [...]}` |
//!
//! A condition is a reference (true when its value is truthy: `true`, a
//! non-zero number, the strings `true`/`yes`/`1`, a non-empty list or
//! mapping), optionally negated with `!` or `not`, or compared with
//! `== value` / `!= value`.
//!
//! ```
//! use troupe_config::template::{Board, Expr, Template};
//!
//! let board = Board::default();
//! board.record("qa", "qa_agent", r#"{"approved": true, "notes": "fine"}"#);
//! let expr = Expr::parse("{{ $steps.qa.output.approved }}").unwrap();
//! assert!(expr.evaluate(&board));
//! let text = Template::parse("QA said: {{ $steps.qa.output.notes }}").unwrap();
//! assert_eq!(text.render(&board), "QA said: fine");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One step of a path after `$steps.<id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// `.name`
    Field(String),
    /// `[n]`
    Index(usize),
}

/// A reference: `$steps.<step>` and a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The step (or node, or participant) it names.
    pub step: String,
    /// What of it.
    pub path: Vec<Access>,
}

impl Reference {
    /// Every step id the reference names: the step, and a step inside a
    /// parallel block named with `.outputs.<id>`.
    pub fn steps(&self) -> Vec<&str> {
        let mut out = vec![self.step.as_str()];
        let mut i = 0;
        while i + 1 < self.path.len() {
            if self.path[i] == Access::Field("outputs".into())
                && let Access::Field(child) = &self.path[i + 1]
            {
                out.push(child);
            }
            i += 1;
        }
        out
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$steps.{}", self.step)?;
        for a in &self.path {
            match a {
                Access::Field(name) => write!(f, ".{name}")?,
                Access::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A template that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// What is wrong.
    pub message: String,
}

fn err<T>(message: impl Into<String>) -> Result<T, TemplateError> {
    Err(TemplateError {
        message: message.into(),
    })
}

/// Parses what is between `{{` and `}}`.
fn parse_reference(inner: &str) -> Result<Reference, TemplateError> {
    let text = inner.trim();
    let Some(rest) = text.strip_prefix("$steps.") else {
        return err(format!(
            "`{{{{ {text} }}}}` is not a step reference (expected `$steps.<id>.output…`)"
        ));
    };
    let ident = |s: &str| -> bool {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '#')
    };
    // The step id runs to the first `.` or `[`.
    let end = rest.find(['.', '[']).unwrap_or(rest.len());
    let step = &rest[..end];
    if !ident(step) {
        return err(format!("`$steps.{rest}` has no valid step id"));
    }
    let mut path = Vec::new();
    let tail = &rest[end..];
    let bytes = tail;
    let mut pos = 0;
    while pos < bytes.len() {
        let c = bytes[pos..].chars().next().unwrap_or(' ');
        if c == '.' {
            let start = pos + 1;
            let stop = bytes[start..]
                .find(['.', '['])
                .map_or(bytes.len(), |i| start + i);
            let name = &bytes[start..stop];
            if !ident(name) {
                return err(format!(
                    "`$steps.{rest}`: a `.` must be followed by a field name"
                ));
            }
            path.push(Access::Field(name.to_string()));
            pos = stop;
        } else if c == '[' {
            let Some(close) = bytes[pos..].find(']') else {
                return err(format!("`$steps.{rest}`: `[` without `]`"));
            };
            let inside = bytes[pos + 1..pos + close].trim();
            let Ok(n) = inside.parse::<usize>() else {
                return err(format!(
                    "`$steps.{rest}`: `[{inside}]` is not an index (expected a number such as [0])"
                ));
            };
            path.push(Access::Index(n));
            pos += close + 1;
        } else {
            return err(format!("`$steps.{rest}`: unexpected `{c}`"));
        }
    }
    Ok(Reference {
        step: step.to_string(),
        path,
    })
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Ref(Reference),
}

/// Text with `{{ $steps… }}` references in it (agent instructions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parses a template; text without `{{` is a template of one piece.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                return err("`{{` without a closing `}}`");
            };
            pieces.push(Piece::Ref(parse_reference(&after[..close])?));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template { pieces })
    }

    /// Whether the template has references (so it must be rendered per turn).
    pub fn has_references(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Ref(_)))
    }

    /// Its references.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Ref(r) => Some(r),
            Piece::Text(_) => None,
        })
    }

    /// The text with every reference replaced by its value ("" when the
    /// step has not run yet).
    pub fn render(&self, board: &Board) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Ref(r) => {
                    out.push_str(&board.resolve(r).map(|v| text_of(&v)).unwrap_or_default())
                }
            }
        }
        out
    }
}

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
        let test = if tail.is_empty() {
            Test::Truthy
        } else if let Some(v) = tail.strip_prefix("==") {
            Test::Equals(unquote(v.trim()))
        } else if let Some(v) = tail.strip_prefix("!=") {
            Test::NotEquals(unquote(v.trim()))
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
    pub fn evaluate(&self, board: &Board) -> bool {
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

/// A value as text: strings as they are, anything else as JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads a step's output as JSON when it is JSON (a Markdown fence around
/// it is tolerated), else as a string.
fn output_value(text: &str) -> Value {
    let t = text.trim();
    let unfenced = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(t);
    match serde_json::from_str::<Value>(unfenced) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(text.to_string()),
    }
}

/// What a step last produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// The agent that ran it.
    pub agent: String,
    /// Its last message's text.
    pub output: String,
}

/// What the steps of a workflow produced, for templates and conditions:
/// the latest output of each step id. Shared by the agents of one built
/// workflow (and by its nested inline workflows); clones share the data.
#[derive(Debug, Clone, Default)]
pub struct Board {
    records: Arc<Mutex<BTreeMap<String, StepRecord>>>,
    /// Parallel block id → the ids of its steps, in order.
    blocks: Arc<BTreeMap<String, Vec<String>>>,
}

impl Board {
    /// A board that knows these parallel blocks.
    pub fn with_blocks(blocks: BTreeMap<String, Vec<String>>) -> Self {
        Board {
            records: Arc::default(),
            blocks: Arc::new(blocks),
        }
    }

    /// Records what `step` (run by `agent`) produced.
    pub fn record(&self, step: &str, agent: &str, output: &str) {
        // A poisoned lock only means a panic elsewhere mid-insert; the
        // map itself is intact.
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.insert(
            step.to_string(),
            StepRecord {
                agent: agent.to_string(),
                output: output.to_string(),
            },
        );
    }

    /// What `step` last produced.
    pub fn get(&self, step: &str) -> Option<StepRecord> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.get(step).cloned()
    }

    /// Forgets everything recorded (a new run).
    pub fn clear(&self) {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.clear();
    }

    fn step_value(&self, step: &str, depth: usize) -> Option<Value> {
        if let Some(children) = self.blocks.get(step) {
            if depth > 32 {
                return None;
            }
            let mut steps = serde_json::Map::new();
            for c in children {
                if let Some(v) = self.step_value(c, depth + 1) {
                    steps.insert(c.clone(), v);
                }
            }
            let mut block = serde_json::Map::new();
            block.insert("steps".into(), Value::Object(steps));
            block.insert(
                "order".into(),
                Value::Array(children.iter().cloned().map(Value::String).collect()),
            );
            let mut out = serde_json::Map::new();
            out.insert("output".into(), Value::Object(block));
            return Some(Value::Object(out));
        }
        let record = self.get(step)?;
        let mut out = serde_json::Map::new();
        out.insert("output".into(), output_value(&record.output));
        out.insert("agent".into(), Value::String(record.agent));
        Some(Value::Object(out))
    }

    /// The value a reference names, if the step has run.
    pub fn resolve(&self, r: &Reference) -> Option<Value> {
        let mut step = r.step.clone();
        let mut path = r.path.as_slice();
        // `.outputs.<id>` / `.outputs[n]` step into a parallel block.
        while let [Access::Field(f), next, rest @ ..] = path
            && f == "outputs"
            && let Some(children) = self.blocks.get(&step)
        {
            step = match next {
                Access::Field(id) if children.contains(id) => id.clone(),
                Access::Index(i) => children.get(*i)?.clone(),
                _ => return None,
            };
            path = rest;
        }
        let mut value = self.step_value(&step, 0)?;
        for a in path {
            value = match (a, value) {
                (Access::Field(f), Value::Object(mut m)) => m.remove(f)?,
                (Access::Index(i), Value::Array(mut v)) if *i < v.len() => v.swap_remove(*i),
                _ => return None,
            };
        }
        Some(value)
    }
}
