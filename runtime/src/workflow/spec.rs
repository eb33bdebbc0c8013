//! [`Spec`]: the immutable description of a workflow, shared by its runs.

use std::sync::Arc;

use troupe_router::Router;

use super::actor_pool::ActorPool;
use super::child_paths::ChildPaths;
use crate::agent::Agent;
use crate::graph::{Graph, NodeInput};
use crate::retry::RetryPolicy;
use crate::stop::StopCondition;
use crate::store::{CheckpointStore, Durability};

/// The immutable description of a workflow, shared by all of its runs.
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) names: Vec<Arc<str>>,
    /// The participants' indexes in name order (made once here, not by
    /// every run: a checkpoint writes inboxes and a result its spend in
    /// that order).
    pub(crate) participants_by_name: Vec<usize>,
    pub(crate) router: Router,
    /// Participant index → thread slot.
    pub(crate) slot_of: Vec<usize>,
    /// Thread slot → key in the run thread's children.
    pub(crate) slot_names: Vec<String>,
    /// The slots some participant uses (only those become children of the
    /// run thread), in name order. Made once here, not by every run.
    pub(crate) slots_by_name: Vec<usize>,
    pub(crate) stop: Option<StopCondition>,
    /// Retry policy by participant.
    pub(crate) retries: Vec<Option<RetryPolicy>>,
    /// What each participant receives of its predecessors (graph mode).
    pub(crate) inputs: Vec<NodeInput>,
    /// The control-flow graph, if any.
    pub(crate) graph: Option<Graph>,
    /// Graph without a router: messages travel along the transitions taken.
    pub(crate) edge_delivery: bool,
    /// At most this many turns at once (router and dataflow scheduling).
    pub(crate) max_concurrency: Option<usize>,
    /// At most this many messages kept per thread (see
    /// [`WorkflowBuilder::max_history`](crate::WorkflowBuilder::max_history)).
    pub(crate) max_history: Option<usize>,
    /// Where checkpoints go.
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    /// Overrides the store's durability (see [`Durability`]).
    pub(crate) durability: Option<Durability>,
    /// Also checkpoint every this many deliveries (router-only, dataflow).
    pub(crate) checkpoint_every: Option<u64>,
    /// See [`topology_hash`](super::snapshot::topology_hash).
    pub(crate) topology_hash: u64,
    /// Agent actors kept between runs (`None`: each run spawns its own).
    pub(crate) pool: Option<ActorPool>,
    /// The participants' paths, shared by runs that start at one path.
    pub(crate) child_paths: ChildPaths,
    /// Whether each participant's messages are the run's answer (see
    /// [`WorkflowBuilder::answer`](crate::WorkflowBuilder::answer)); empty:
    /// every participant's are (the last message is the answer).
    pub(crate) answer: Vec<bool>,
}

impl Spec {
    /// The description of participant `name` ("" for none, or for a name
    /// that is not a participant).
    pub(crate) fn description_of(&self, name: &str) -> &str {
        self.router
            .index_of(name)
            .map_or("", |i| self.agents[i].description())
    }

    /// Whether participant `index`'s messages may be the run's final
    /// response.
    #[inline]
    pub(crate) fn answers(&self, index: usize) -> bool {
        self.answer
            .get(index)
            .copied()
            .unwrap_or(self.answer.is_empty())
    }
}
