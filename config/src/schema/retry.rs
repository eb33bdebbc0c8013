//! `retry:` of a step or a graph node: how often, how patiently, and on
//! which failures a turn is tried again.

use schemars::JsonSchema;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
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
    /// Only these failures (all when absent): kinds of failure
    /// (`rate_limit` means `transient`; `node`, a lost cluster node, runs
    /// the turn again on another node hosting the agent, if there is one),
    /// or `{pattern: REGEX}` for failures whose text matches.
    #[serde(default)]
    pub on: Option<Vec<RetryOnSpec>>,
}

/// One entry of `retry.on`: a kind of failure, or a pattern its text
/// matches.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum RetryOnSpec {
    /// A kind of failure.
    Kind(ErrorKind),
    /// A failure whose text matches.
    Pattern(PatternSpec),
}

/// `{pattern: "rate limit|429"}`: failures whose text matches this
/// regular expression (the `regex` crate's syntax).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternSpec {
    /// The regular expression.
    pub pattern: String,
}

impl<'de> Deserialize<'de> for RetryOnSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RetryOnSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a kind of failure (`timeout`, `transient`, ...) or `{pattern: REGEX}`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RetryOnSpec, E> {
                ErrorKind::deserialize(de::value::StrDeserializer::<E>::new(v))
                    .map(RetryOnSpec::Kind)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RetryOnSpec, A::Error> {
                PatternSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RetryOnSpec::Pattern)
            }
        }
        deserializer.deserialize_any(V)
    }
}
