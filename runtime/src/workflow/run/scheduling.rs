//! How a run picks its next turns: by the router (no graph), by a graph in
//! supersteps, or by a graph in dataflow — the one type that tells the
//! three apart. The drive (`schedule`) asks it who runs next; a turn's end
//! (`turns`) asks it where the reply goes and what a turn cut short
//! becomes; the rest of the run asks it for the graph, if there is one.

use super::graph_run::GraphRun;
use super::participants::TurnState;
use crate::agent::Reply;
use crate::graph::Scheduler;

/// How a run picks its next turns (see the module's documentation).
pub(super) enum Scheduling {
    /// No graph: a participant runs when its inbox holds a full batch.
    Router,
    /// A graph in supersteps: the activated nodes run together, their
    /// replies held for the superstep's barrier and applied there in node
    /// order; an interrupted superstep is undone and runs again whole.
    Supersteps {
        /// The graph's cursor and the superstep under way.
        graph: GraphRun,
        /// How many supersteps the run may take.
        limit: Option<u64>,
    },
    /// A graph in dataflow: an activated node runs as soon as it is not
    /// running, its reply applied when it ends.
    Dataflow(GraphRun),
}

impl Scheduling {
    /// The scheduling of a graph run by `scheduler`, at most `limit`
    /// supersteps.
    pub(super) fn graph_by(scheduler: Scheduler, limit: Option<u64>, graph: GraphRun) -> Self {
        match scheduler {
            Scheduler::Supersteps => Scheduling::Supersteps { graph, limit },
            Scheduler::Dataflow => Scheduling::Dataflow(graph),
        }
    }

    /// The graph run, if the run follows a graph.
    #[inline]
    pub(super) fn graph(&self) -> Option<&GraphRun> {
        match self {
            Scheduling::Router => None,
            Scheduling::Supersteps { graph, .. } | Scheduling::Dataflow(graph) => Some(graph),
        }
    }

    /// The graph run, to change, if the run follows a graph.
    #[inline]
    pub(super) fn graph_mut(&mut self) -> Option<&mut GraphRun> {
        match self {
            Scheduling::Router => None,
            Scheduling::Supersteps { graph, .. } | Scheduling::Dataflow(graph) => Some(graph),
        }
    }

    /// What a participant whose turn was cut short (cancelled, stopped
    /// gracefully, a retry not run now) becomes: a turn that runs again on
    /// resume — except in supersteps, where the superstep is undone and
    /// runs again whole.
    #[inline]
    pub(super) fn cut_short(&self) -> TurnState {
        match self {
            Scheduling::Supersteps { .. } => TurnState::Idle,
            Scheduling::Router | Scheduling::Dataflow(_) => TurnState::CutShort,
        }
    }

    /// Takes participant `index`'s `reply` for the superstep's barrier, in
    /// supersteps; otherwise gives it back, to be applied now.
    #[inline]
    pub(super) fn hold(&mut self, index: usize, reply: Box<Reply>) -> Option<Box<Reply>> {
        match self {
            Scheduling::Supersteps { graph, .. } => {
                graph.hold(index, reply);
                None
            }
            Scheduling::Router | Scheduling::Dataflow(_) => Some(reply),
        }
    }
}
