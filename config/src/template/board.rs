//! [`Board`]: what the steps of a workflow produced, read from the run's
//! state, for templates and conditions.
//!
//! Each participant of a built config records its last output in the run
//! state (`Reply::with_state`, see [`StepRecord::delta`]): under
//! `steps.<id>.output` and `steps.<id>.agent`. The state lives in the
//! run's thread, so two runs never share it, and a continued session or a
//! resumed checkpoint keeps it.

use std::collections::BTreeMap;

use serde_json::Value;
use troupe_runtime::state::StateDelta;

use super::reference::{Access, Reference};

/// No parallel blocks.
static NO_BLOCKS: BTreeMap<String, Vec<String>> = BTreeMap::new();

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

/// The run-state key of what step `step` last produced.
fn output_key(step: &str) -> String {
    format!("steps.{step}.output")
}

/// The run-state key of the agent that ran step `step`.
fn agent_key(step: &str) -> String {
    format!("steps.{step}.agent")
}

/// What a step last produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// The agent that ran it.
    pub agent: String,
    /// Its last message's text.
    pub output: String,
}

impl StepRecord {
    /// What agent `agent` produced.
    pub fn new(agent: impl Into<String>, output: impl Into<String>) -> Self {
        StepRecord {
            agent: agent.into(),
            output: output.into(),
        }
    }

    /// The run-state change recording this as what step `step` produced
    /// (for a reply: `Reply::with_state_delta`).
    pub fn delta(&self, step: &str) -> StateDelta {
        StateDelta::new()
            .set(output_key(step), self.output.clone())
            .set(agent_key(step), self.agent.clone())
    }
}

/// What the steps of a workflow produced, as a view over a run's state
/// (see the module's documentation): the latest output of each step id,
/// and the parallel blocks that group steps.
#[derive(Debug, Clone, Copy)]
pub struct Board<'a> {
    values: &'a BTreeMap<String, String>,
    /// Parallel block id → the ids of its steps, in order.
    blocks: &'a BTreeMap<String, Vec<String>>,
}

impl<'a> Board<'a> {
    /// The board over run state `values` (a turn's `ctx.state()`), with
    /// no parallel blocks.
    pub fn new(values: &'a BTreeMap<String, String>) -> Self {
        Board {
            values,
            blocks: &NO_BLOCKS,
        }
    }

    /// The board over run state `values`, knowing these parallel blocks.
    pub fn with_blocks(
        values: &'a BTreeMap<String, String>,
        blocks: &'a BTreeMap<String, Vec<String>>,
    ) -> Self {
        Board { values, blocks }
    }

    /// What `step` last produced.
    pub fn get(&self, step: &str) -> Option<StepRecord> {
        let output = self.values.get(&output_key(step))?;
        let agent = self.values.get(&agent_key(step)).cloned();
        Some(StepRecord {
            agent: agent.unwrap_or_default(),
            output: output.clone(),
        })
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
