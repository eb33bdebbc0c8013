//! The cassette's API for tests: load a recording, build models answered
//! only from it, and ask what was recorded and what a replay left unused
//! (see the example in the module's doc).

use std::sync::Arc;

use async_trait::async_trait;

use super::tape::Kind;
use super::{Cassette, CassetteError, Entry, ToolEntry};
use crate::error::ModelError;
use crate::model::{ChatModel, ChatRequest, ChatResponse};

impl Cassette {
    /// The recording in `dir`, to replay strictly (as [`Cassette::replay`]).
    pub fn load(dir: &std::path::Path) -> Result<Arc<Self>, CassetteError> {
        Self::replay(dir)
    }

    /// A model for agent `agent` answered only from this cassette: no
    /// model behind it (recording through it, every call fails).
    pub fn replay_model(self: &Arc<Self>, agent: &str) -> Arc<dyn ChatModel> {
        let name = self.replay.as_ref().and_then(|(_, r)| {
            r.models
                .iter()
                .find(|e| e.agent == agent || e.agent.rsplit('/').next() == Some(agent))
                .map(|e| e.model.clone())
        });
        self.wrap(
            agent,
            Arc::new(NoModel {
                name: name.unwrap_or_else(|| "cassette".into()),
            }),
        )
    }

    /// The recorded model calls (replaying), in the order they ended.
    pub fn model_calls(&self) -> &[Entry] {
        self.replay.as_ref().map_or(&[], |(_, r)| &r.models)
    }

    /// The recorded tool calls (replaying), in the order they ended.
    pub fn tool_calls(&self) -> &[ToolEntry] {
        self.replay.as_ref().map_or(&[], |(_, r)| &r.tools)
    }

    /// The first recorded call of tool `tool` by the agent at `path` (or
    /// named `path`: its path's last segment) whose arguments hold every
    /// field of `arguments` with the same value; else an error listing
    /// that agent's tool calls, for an assertion's message.
    pub fn tool_call(
        &self,
        path: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<&ToolEntry, String> {
        let mine: Vec<&ToolEntry> = self
            .tool_calls()
            .iter()
            .filter(|e| e.agent == path || e.agent.rsplit('/').next() == Some(path))
            .collect();
        mine.iter()
            .copied()
            .find(|e| {
                e.tool == tool
                    && serde_json::from_str::<serde_json::Value>(&e.arguments)
                        .is_ok_and(|a| holds(&a, arguments))
            })
            .ok_or_else(|| {
                let seen: Vec<String> = mine
                    .iter()
                    .map(|e| format!("{}#{} {}({})", e.agent, e.call, e.tool, e.arguments))
                    .collect();
                format!(
                    "no call of `{tool}` with {arguments} by `{path}` in the cassette; it has: [{}]",
                    seen.join(", ")
                )
            })
    }

    /// The recorded calls no replay used yet, as `model|tool|agent PATH
    /// #CALL` (empty when recording): what a run that should replay the
    /// whole recording did not ask for.
    pub fn unused(&self) -> Vec<String> {
        let Some((_, recorded)) = &self.replay else {
            return Vec::new();
        };
        let tapes: Vec<_> = self
            .tapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let used = |kind| {
            tapes
                .iter()
                .flat_map(|t| t.used(kind))
                .collect::<std::collections::HashSet<usize>>()
        };
        let (models, tools, agents) = (used(Kind::Models), used(Kind::Tools), used(Kind::Agents));
        let mut out = Vec::new();
        for (i, e) in recorded.models.iter().enumerate() {
            if !models.contains(&i) {
                out.push(format!("model {} #{}", e.agent, e.call));
            }
        }
        for (i, e) in recorded.tools.iter().enumerate() {
            if !tools.contains(&i) {
                out.push(format!("tool {} #{}", e.agent, e.call));
            }
        }
        for (i, e) in recorded.agents.iter().enumerate() {
            if !agents.contains(&i) {
                out.push(format!("agent {} #{}", e.agent, e.call));
            }
        }
        out
    }
}

/// Whether `value` holds every field of `want` with the same value
/// (objects field by field, anything else equal).
fn holds(value: &serde_json::Value, want: &serde_json::Value) -> bool {
    match (value, want) {
        (serde_json::Value::Object(v), serde_json::Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| v.get(k).is_some_and(|vv| holds(vv, wv))),
        _ => value == want,
    }
}

/// The model behind [`Cassette::replay_model`]: never answers.
struct NoModel {
    name: String,
}

#[async_trait]
impl ChatModel for NoModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(ModelError::Other(
            "cassette: a replay-only model was asked while recording".into(),
        ))
    }
}
