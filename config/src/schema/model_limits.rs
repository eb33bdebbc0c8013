//! A model's traffic settings: `rate_limit:` (shared by every agent using
//! the model), `retry:` (per call) and `on_length:`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::HumanDuration;

/// How fast the model may be called: one limiter per model and endpoint,
/// shared by every agent, run and session of the process. Unset fields do
/// not limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    /// Requests per minute, spread evenly (one every `60s / n`).
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Tokens per minute (prompt estimated, plus `max_tokens`).
    #[serde(default)]
    pub tokens_per_minute: Option<u32>,
    /// Calls in flight at once.
    #[serde(default)]
    pub max_concurrent: Option<u32>,
}

/// A kind of failed model call that may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetryKindSpec {
    /// HTTP 429.
    RateLimit,
    /// HTTP 5xx (Anthropic's 529 included).
    ServerError,
    /// No answer in time (or HTTP 408).
    Timeout,
    /// The server could not be reached, or the connection dropped.
    Connect,
}

/// How a model call that failed is tried again. A server's `Retry-After`
/// is honoured over the computed wait.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRetrySpec {
    /// Attempts in all, the first included (default 3).
    #[serde(default)]
    pub attempts: Option<u32>,
    /// Wait before the first retry (default 500ms).
    #[serde(default)]
    pub initial: Option<HumanDuration>,
    /// Longest computed wait (default 20s).
    #[serde(default)]
    pub max: Option<HumanDuration>,
    /// Factor between two waits (default 2).
    #[serde(default)]
    pub multiplier: Option<f64>,
    /// Randomise each wait between half and all of it (default true).
    #[serde(default)]
    pub jitter: Option<bool>,
    /// The failures tried again (default: all four kinds).
    #[serde(default)]
    pub on: Option<Vec<RetryKindSpec>>,
}

/// What an agent does with an answer cut off at the token limit
/// (`finish_reason: length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnLengthSpec {
    /// Fail the turn, saying the answer was cut off (the default).
    #[default]
    Error,
    /// Ask the model to go on (up to 3 times) and join the parts.
    Continue,
}
