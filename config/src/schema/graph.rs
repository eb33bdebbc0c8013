//! `graph:`: nodes, transitions between them, and how they are scheduled.

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_runtime::{graph::Isolation, graph::Join, graph::NodeInput, graph::Scheduler};

use super::conditions::ConditionSpec;
use super::merge::{CacheSpec, MergeSpec};
use super::retry::RetrySpec;
use crate::refs::ref_id;
use crate::shorthand::{ShortForm, Shorthand};

/// The long form of a graph node.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeForm {
    /// The node's id (default: the agent's or workflow's name).
    #[serde(default)]
    pub id: Option<String>,
    /// The agent or named workflow the node runs (`agent@node`: on
    /// another node of the cluster).
    pub agent: String,
    /// How it waits for several incoming transitions (default
    /// `all_that_can_arrive`).
    #[serde(default)]
    pub join: Option<Join>,
    /// What it receives of its predecessors (default `messages`;
    /// `{key: NAME}`: their results under a name).
    #[serde(default)]
    pub input: Option<NodeInput>,
    /// Its predecessors' results merged into the one message it reads, by
    /// a template (instead of `input`).
    #[serde(default)]
    pub merge: Option<MergeSpec>,
    /// Its result cache: a result kept under its key is used instead of
    /// running it.
    #[serde(default)]
    pub cache: Option<CacheSpec>,
    /// How the branches it fans out to start their threads (default
    /// `fresh`).
    #[serde(default)]
    pub fan_out: Option<Isolation>,
    /// Retries of its failed turns.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// Where it goes next: the first case whose condition holds, else
    /// the default (instead of transitions from this node).
    #[serde(default)]
    pub switch: Option<SwitchSpec>,
}

/// One case of a switch.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// When the case holds.
    pub when: ConditionSpec,
    /// The node it goes to.
    pub to: String,
}

/// A first-match switch: the cases in order, only the first that holds
/// fires; the default when none does (nothing, without one).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// The cases, in order.
    pub cases: Vec<CaseSpec>,
    /// The node it goes to when no case holds.
    #[serde(default)]
    pub default: Option<String>,
}

impl ShortForm for NodeForm {
    type Long = NodeForm;
    const NAME: &'static str = "Node";
    const SHORT: &'static str = "An agent's or named workflow's name.";
    const EXPECTING: &'static str = "an agent name, or a mapping with `agent`";
    fn from_short(text: &str) -> Self {
        NodeForm {
            id: None,
            agent: text.to_string(),
            join: None,
            input: None,
            merge: None,
            cache: None,
            fan_out: None,
            retry: None,
            switch: None,
        }
    }
    fn from_long(long: NodeForm) -> Self {
        long
    }
}

/// A graph node: an agent or workflow name, or the long form.
pub type NodeSpec = Shorthand<NodeForm>;

impl Shorthand<NodeForm> {
    /// The node's id: given, else its agent's name (without an `@node`
    /// part).
    pub fn id(&self) -> &str {
        self.0
            .id
            .as_deref()
            .unwrap_or_else(|| ref_id(&self.0.agent))
    }
}

/// A graph transition.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionSpec {
    /// The node it leaves.
    pub from: String,
    /// The node it goes to.
    pub to: String,
    /// When it fires (always, when absent).
    #[serde(default)]
    pub when: Option<ConditionSpec>,
    /// Declares a loop (a transition back to an earlier node); loops are
    /// also found by themselves.
    #[serde(default, rename = "loop")]
    pub is_loop: Option<bool>,
    /// How often this loop may be taken in one run (default
    /// `max_loop_iterations`).
    #[serde(default)]
    pub max_iterations: Option<u32>,
}

/// A control-flow graph.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
    /// The start nodes (default: those with no incoming transition).
    #[serde(default)]
    pub start: Vec<String>,
    /// The transitions.
    #[serde(default)]
    pub transitions: Vec<TransitionSpec>,
    /// When activated nodes start (default `supersteps`, checkpointed
    /// between them).
    #[serde(default)]
    pub scheduler: Option<Scheduler>,
    /// Fail a run that takes more supersteps than this.
    #[serde(default)]
    pub max_supersteps: Option<u64>,
}
