//! `max_turns:` of a workflow: its turn ceiling, a number of turns or
//! `unbounded`, and the default ceiling of each workflow kind when it is
//! not written.

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The turn ceiling of a workflow of the kind `kind` (as
/// [`WorkflowSpec::kinds`](super::WorkflowSpec::kinds) names it, `router`
/// for a router alone) when `max_turns:` is not written: 100 for the kinds
/// that loop until something stops them (a router, `round_robin`,
/// `selector`, `swarm`), 1,000 for those whose shape ends them
/// (`sequential`, `map_reduce`, `graph`, `steps`, `plan`: their loops are
/// bounded by `max_loop_iterations` too). `magentic` has none of its own
/// here: the manager stops after `magentic.max_turns` rounds (20 by
/// default).
pub fn default_turn_ceiling(kind: &str) -> Option<u64> {
    match kind {
        "router" | "round_robin" | "selector" | "swarm" => Some(100),
        "sequential" | "map_reduce" | "graph" | "steps" | "plan" | "reasoner" => Some(1000),
        _ => None,
    }
}

/// `max_turns:` on a workflow: the most agent turns a run takes (it then
/// ends `stopped`), or `unbounded` for no ceiling at all. Unwritten, the
/// workflow's kind sets a default ceiling (see `default_turn_ceiling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum TurnLimit {
    /// At most this many turns.
    Turns(u64),
    /// No ceiling: the run goes on until a stop condition holds or nothing
    /// is left to do.
    Unbounded(UnboundedWord),
}

/// The word `unbounded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnboundedWord {
    /// No ceiling.
    Unbounded,
}

impl TurnLimit {
    /// The ceiling, `None` for `unbounded`.
    pub fn turns(self) -> Option<u64> {
        match self {
            TurnLimit::Turns(n) => Some(n),
            TurnLimit::Unbounded(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for TurnLimit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TurnLimit;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of turns, or `unbounded`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TurnLimit, E> {
                Ok(TurnLimit::Turns(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TurnLimit, E> {
                u64::try_from(v)
                    .map(TurnLimit::Turns)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TurnLimit, E> {
                match v {
                    "unbounded" => Ok(TurnLimit::Unbounded(UnboundedWord::Unbounded)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(V)
    }
}
