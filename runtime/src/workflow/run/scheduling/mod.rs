//! How a run picks its next turns: one type, [`Schedule`], and its three
//! implementations — [`Router`] (no graph: a participant runs when its
//! inbox holds a full batch), [`Supersteps`] (a graph, its activated
//! nodes run together and their replies meet at a barrier) and
//! [`Dataflow`] (a graph, a node runs as soon as it is activated and
//! idle). Each owns its branching: who runs next (`drive`), where a
//! finished turn's reply goes (`hold`, `took`), and what a turn cut short
//! becomes (`cut_short`). [`Scheduling`] holds the one a run has and is
//! the one place the three are told apart.
//!
//! A scheduling drives the run's engine ([`RunCore`]): it starts turns
//! through it and applies replies with it, and never sees a mailbox.

mod dataflow;
pub(super) mod graph_run;
mod router;
mod schedule;
mod supersteps;

use self::dataflow::Dataflow;
use self::graph_run::GraphRun;
use self::router::Router;
pub(super) use self::schedule::{Drive, Schedule};
use self::supersteps::Supersteps;
use super::core::RunCore;
use super::participants::TurnState;
use super::replies::Applied;
use crate::agent::Reply;
use crate::graph::Scheduler;
use crate::workflow::protocol::RunAddr;

/// The scheduling of one run: one of the three (see the module's
/// documentation), dispatched here and nowhere else.
pub(in crate::workflow::run) enum Scheduling {
    /// No graph.
    Router(Router),
    /// A graph in supersteps.
    Supersteps(Supersteps),
    /// A graph in dataflow.
    Dataflow(Dataflow),
}

/// Calls `$call` on whichever scheduling `$s` is.
macro_rules! each {
    ($s:expr, $one:ident => $call:expr) => {
        match $s {
            Scheduling::Router($one) => $call,
            Scheduling::Supersteps($one) => $call,
            Scheduling::Dataflow($one) => $call,
        }
    };
}

impl Scheduling {
    /// The scheduling of a run without a graph.
    pub(in crate::workflow::run) fn router() -> Self {
        Scheduling::Router(Router)
    }

    /// The scheduling of a graph run by `scheduler`, at most `limit`
    /// supersteps.
    pub(in crate::workflow::run) fn graph_by(
        scheduler: Scheduler,
        limit: Option<u64>,
        graph: GraphRun,
    ) -> Self {
        match scheduler {
            Scheduler::Supersteps => Scheduling::Supersteps(Supersteps::new(graph, limit)),
            Scheduler::Dataflow => Scheduling::Dataflow(Dataflow::new(graph)),
        }
    }

    /// Applies participant `index`'s `reply` with the engine and takes on
    /// from it (see [`Schedule::took`]) — unless it waits for the
    /// caller's answer, and goes nowhere yet.
    pub(in crate::workflow::run) fn apply(
        &mut self,
        core: &mut RunCore,
        index: usize,
        reply: Box<Reply>,
    ) {
        if let Some(applied) = core.apply_reply(index, reply) {
            self.took(core, index, applied);
        }
    }

    /// The span a turn started now runs under, if not the run's own: the
    /// superstep's under way.
    #[inline]
    pub(in crate::workflow::run) fn turn_span(&self) -> Option<&tracing::Span> {
        self.graph().and_then(GraphRun::superstep_span)
    }
}

impl Schedule for Scheduling {
    async fn drive(&mut self, core: &mut RunCore, myself: &RunAddr) -> Drive {
        each!(self, s => s.drive(core, myself).await)
    }

    #[inline]
    fn hold(&mut self, index: usize, reply: Box<Reply>) -> Option<Box<Reply>> {
        each!(self, s => s.hold(index, reply))
    }

    #[inline]
    fn took(&mut self, core: &mut RunCore, index: usize, applied: Applied) {
        each!(self, s => s.took(core, index, applied))
    }

    #[inline]
    fn cut_short(&self) -> TurnState {
        each!(self, s => s.cut_short())
    }

    #[inline]
    fn graph(&self) -> Option<&GraphRun> {
        each!(self, s => s.graph())
    }

    #[inline]
    fn graph_mut(&mut self) -> Option<&mut GraphRun> {
        each!(self, s => s.graph_mut())
    }
}
