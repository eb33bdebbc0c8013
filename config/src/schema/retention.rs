//! `checkpoint: {retention: …}`: what the store keeps, applied by `troupe
//! serve` in the background and by `troupe runs prune`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::HumanDuration;

/// What the store keeps; a field left out keeps everything of its kind.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetentionSpec {
    /// Finished runs (completed, stopped or cancelled) whose last
    /// checkpoint is older than this are deleted (`7d`, `12h`).
    #[serde(default)]
    pub runs: Option<HumanDuration>,
    /// Each run keeps its newest this many checkpoints (at least 1).
    #[serde(default)]
    pub checkpoints: Option<u64>,
    /// Conversations (sessions) idle for longer than this are deleted.
    #[serde(default)]
    pub sessions: Option<HumanDuration>,
}

impl RetentionSpec {
    /// The runtime's retention.
    pub fn to_runtime(&self) -> troupe_runtime::history::Retention {
        troupe_runtime::history::Retention {
            runs: self.runs.as_ref().map(|d| d.duration),
            checkpoints: self
                .checkpoints
                .map(|k| usize::try_from(k).unwrap_or(usize::MAX)),
            sessions: self.sessions.as_ref().map(|d| d.duration),
        }
    }
}
