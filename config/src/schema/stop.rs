//! `stop:`: when a run stops.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::HumanDuration;

/// When a run stops. Every condition given counts (any of them stops the
/// run); `all` lists conditions that must all have held.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopSpec {
    /// After this many messages (inputs included).
    #[serde(default)]
    pub max_messages: Option<u64>,
    /// After this many agent turns.
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// When a produced message contains this text.
    #[serde(default)]
    pub text_mention: Option<String>,
    /// When one of these produces a message.
    #[serde(default)]
    pub source_match: Option<Vec<String>>,
    /// When a message hands off to this target (e.g. `user`).
    #[serde(default)]
    pub handoff: Option<String>,
    /// When the run has spent this many tokens.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// When the run has lasted this long (`30s`, `5m`).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Conditions that must all have held.
    #[serde(default)]
    pub all: Option<Vec<StopSpec>>,
    /// Conditions any of which stops the run.
    #[serde(default)]
    pub any: Option<Vec<StopSpec>>,
}
