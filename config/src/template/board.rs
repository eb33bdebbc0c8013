//! [`Board`]: what the steps of a workflow produced, for templates and
//! conditions to read.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::reference::{Access, Reference};

/// A value as text: strings as they are, anything else as JSON.
pub(super) fn text_of(v: &Value) -> String {
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
        let mut records = self.records();
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
        let records = self.records();
        records.get(step).cloned()
    }

    /// Forgets everything recorded (a new run).
    pub fn clear(&self) {
        let mut records = self.records();
        records.clear();
    }

    /// The recorded outputs, locked. A poisoned lock only means a panic
    /// elsewhere while it was held; every change to the map is one
    /// `insert` or `clear`, so the map itself is intact.
    fn records(&self) -> MutexGuard<'_, BTreeMap<String, StepRecord>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
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
