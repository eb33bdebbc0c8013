//! `a2a:` on an agent: a remote agent spoken to over the Agent2Agent
//! protocol instead of a model.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::model_limits::ModelRetrySpec;
use crate::duration::HumanDuration;

/// A remote A2A agent (JSON-RPC binding, protocol 1.0): each turn sends it
/// the messages new to the agent and answers with what the remote task
/// produced; its questions (`input-required`) become the run's input
/// requests, and a cancelled run cancels the remote task.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aSpec {
    /// The agent's base URL (its card is at
    /// `{url}/.well-known/agent-card.json`), or its card's URL (ending in
    /// `.json`). May use `${VAR}`.
    pub url: String,
    /// Headers sent with every request, such as `Authorization: Bearer
    /// ${TOKEN}`. Values may use `${VAR}`; they are secrets, never shown.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Time allowed for one call (for a stream: until it opens, then
    /// between two events). Default 120s.
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// How failed calls are tried again (as a model's `retry:`).
    #[serde(default)]
    pub retry: Option<ModelRetrySpec>,
}
