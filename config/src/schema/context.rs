//! `context:` of an agent: how much of its thread the agent shows its
//! model on each call.

use schemars::JsonSchema;
use serde::Deserialize;

/// How much of the thread the model is shown: exactly one of `last` or
/// `max_tokens` (absent: the newest messages that fit in the model's
/// context window, 128,000 tokens for a model that does not report its
/// own). Trimmed tool results leave their memory notes behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextSpec {
    /// The last N messages of the thread (at least 1).
    #[serde(default)]
    pub last: Option<usize>,
    /// The newest messages that fit in this many tokens (about four
    /// characters a token; the instructions count against it; at least 1).
    #[serde(default)]
    pub max_tokens: Option<usize>,
}
