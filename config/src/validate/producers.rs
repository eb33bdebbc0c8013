//! What produces the output each id a `$steps.<id>` template may name:
//! an agent (with its `structured_output` schema) or something of no known
//! shape.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::schema::{ConfigFile, StepKind, StepSpec};

/// What produces the output of a step, node or participant id.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Producer {
    /// An agent of this config, with its `structured_output` schema.
    Agent {
        /// The agent's name.
        name: String,
        /// Its schema, if it has one.
        schema: Option<Value>,
    },
    /// Something whose output has no known shape (a workflow, a remote
    /// agent, or an id two workflows give to different agents).
    Unknown,
}

/// The producer of every id a template may name, over every workflow.
pub(super) fn producers(spec: &ConfigFile) -> BTreeMap<String, Producer> {
    let mut out = BTreeMap::new();
    let agent = |name: &str| match spec.agents.get(name) {
        Some(a) => Producer::Agent {
            name: name.to_string(),
            schema: a.structured_output.clone(),
        },
        None => Producer::Unknown,
    };
    let add = |out: &mut BTreeMap<String, Producer>, id: String, p: Producer| {
        let entry = out.entry(id).or_insert_with(|| p.clone());
        if *entry != p {
            *entry = Producer::Unknown;
        }
    };
    for w in spec.workflow.iter().chain(spec.workflows.values()) {
        if let Some(g) = &w.graph {
            for n in &g.nodes {
                add(&mut out, n.id().to_string(), agent(&n.0.agent));
            }
        }
        if let Some(steps) = &w.steps {
            let mut list = Vec::new();
            step_producers(steps, &mut list);
            for (id, target) in list {
                let p = target.map_or(Producer::Unknown, &agent);
                add(&mut out, id, p);
            }
        }
    }
    // A team's participants are named by their own names.
    for name in spec.agents.keys() {
        if !out.contains_key(name) {
            out.insert(name.clone(), agent(name));
        }
    }
    out
}

/// Every agent step's id and the agent it runs (none for other steps).
fn step_producers<'s>(steps: &'s [StepSpec], out: &mut Vec<(String, Option<&'s str>)>) {
    for s in steps {
        if let Some(id) = s.step_id() {
            let target = match s.step_kind() {
                Some(StepKind::Agent) => s.target().filter(|t| !t.contains('@')),
                _ => None,
            };
            out.push((id, target));
        }
        for list in s.children() {
            step_producers(list, out);
        }
    }
}
