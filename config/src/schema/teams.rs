//! The preset teams a workflow may be: `round_robin`, `swarm`, `selector`,
//! `sequential`, `map_reduce`.

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_presets::{SpeakerFallback, StepFlow};
use troupe_runtime::graph::Isolation;

/// Participants of a team preset.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    /// Agents or workflows, in order; `agent@node` runs an agent on another
    /// node of the cluster.
    pub participants: Vec<String>,
}

/// A selector group chat.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorSpec {
    /// Agents or workflows the selector picks from (`agent@node`: on another
    /// node of the cluster).
    pub participants: Vec<String>,
    /// The model that picks the next speaker (a name from `models`).
    pub model: String,
    /// The selection prompt, with `{roles}`, `{participants}`, `{history}`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Whether one participant may speak twice in a row (default false).
    #[serde(default)]
    pub allow_repeated_speaker: Option<bool>,
    /// How often the model is asked before falling back (default 3).
    #[serde(default)]
    pub max_selector_attempts: Option<u32>,
    /// Who speaks when the model names no valid speaker in
    /// `max_selector_attempts`: `round_robin` (the next participant in
    /// turn, the default) or `fail` (the run fails, quoting the answer).
    #[serde(default)]
    pub fallback: Option<SpeakerFallback>,
}

/// A sequential pipeline.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequentialSpec {
    /// Agents or workflows, in order (`agent@node`: on another node of the
    /// cluster).
    pub participants: Vec<String>,
    /// What each step receives (default `all_prior`).
    #[serde(default)]
    pub flow: Option<StepFlow>,
}

/// Where the workers of a map-reduce run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlacementSpec {
    /// Where the worker agent is (default): in this process, or on its
    /// `node:`.
    #[default]
    Local,
    /// On every cluster node hosting the worker, taking turns (round
    /// robin): the sub-tasks spread evenly over the nodes.
    Spread,
    /// On the node hosting the worker that has the fewest turns under way.
    LeastBusy,
}

impl PlacementSpec {
    /// Whether the workers are remote replicas on the nodes hosting the
    /// worker (`spread`, `least_busy`), rather than the worker itself.
    pub fn spreads(placement: Option<PlacementSpec>) -> bool {
        !matches!(placement, None | Some(PlacementSpec::Local))
    }
}

/// A map-reduce team.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapReduceSpec {
    /// The agent that splits the task (a JSON list of strings, or one
    /// sub-task per line).
    pub mapper: String,
    /// The agent that works each sub-task.
    pub worker: String,
    /// The agent that combines the results.
    pub reducer: String,
    /// How workers start their threads (default `fresh`).
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// At most this many workers at once.
    #[serde(default)]
    pub max_concurrency: Option<usize>,
    /// Where the workers run: `local` (default), or `spread` /
    /// `least_busy` over the cluster nodes that host the worker (every
    /// `troupe node` of this config hosts it).
    #[serde(default)]
    pub placement: Option<PlacementSpec>,
    /// With `placement: spread` or `least_busy`: how many more nodes a
    /// sub-task is tried on when the node running it is lost (default 0).
    #[serde(default)]
    pub failover: Option<u32>,
}
