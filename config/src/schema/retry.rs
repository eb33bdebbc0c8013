//! `retry:` of a step or a graph node: how often, how patiently, and on
//! which failures a turn is tried again.

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_runtime::ErrorKind;

use crate::duration::HumanDuration;

/// How retries wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackoffSpec {
    /// The same wait every time.
    Fixed,
    /// Doubling waits.
    Exponential,
}

/// Retries of a failed step (cagent's `retry`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Retries after the first failure (0 = none), as in cagent.
    pub max_attempts: u32,
    /// `fixed` (default) or `exponential`.
    #[serde(default)]
    pub backoff: Option<BackoffSpec>,
    /// The (first) wait (default 1s).
    #[serde(default)]
    pub delay: Option<HumanDuration>,
    /// Exponential: the longest wait (default 30s).
    #[serde(default)]
    pub max_delay: Option<HumanDuration>,
    /// Only these kinds of failure (all when absent); `rate_limit` means
    /// `transient`, and `node` (a lost cluster node) runs the turn again on
    /// another node hosting the agent, if there is one.
    #[serde(default)]
    pub on: Option<Vec<ErrorKind>>,
}
