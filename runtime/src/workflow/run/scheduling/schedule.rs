//! The scheduling type, [`Schedule`]: what each of the three ways a run
//! picks its next turns (`router`, `supersteps`, `dataflow`) implements.

use super::graph_run::GraphRun;
use crate::agent::Reply;
use crate::workflow::protocol::RunAddr;
use crate::workflow::run::core::RunCore;
use crate::workflow::run::participants::TurnState;
use crate::workflow::run::replies::Applied;

/// What a drive asks of the run when it hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::workflow::run) enum Drive {
    /// Nothing: what could start started.
    Done,
    /// A checkpoint now (the state is whole: a superstep's barrier has
    /// passed, the next not begun), then drive again.
    Checkpoint,
}

/// How a run picks its next turns (see the module's documentation).
pub(in crate::workflow::run) trait Schedule {
    /// Starts every turn that can start now. Called after every message
    /// the run takes in, with nothing of the run's own left to do first.
    async fn drive(&mut self, core: &mut RunCore, myself: &RunAddr) -> Drive;

    /// Takes participant `index`'s finished `reply` (the superstep's
    /// barrier holds it), or gives it back to be applied now — as it is
    /// unless a scheduling has a barrier.
    #[inline]
    fn hold(&mut self, index: usize, reply: Box<Reply>) -> Option<Box<Reply>> {
        let _ = index;
        Some(reply)
    }

    /// Takes on from participant `index`'s reply, applied: the router
    /// marks its inbox for the next drive; a graph takes the transitions
    /// that hold.
    fn took(&mut self, core: &mut RunCore, index: usize, applied: Applied);

    /// What a participant whose turn was cut short (cancelled, stopped
    /// gracefully, a retry not run now) becomes: a turn that runs again
    /// on resume, unless a scheduling undoes and reruns more than it.
    #[inline]
    fn cut_short(&self) -> TurnState {
        TurnState::CutShort
    }

    /// The graph run, if the run follows a graph.
    fn graph(&self) -> Option<&GraphRun> {
        None
    }

    /// The graph run, to change, if the run follows a graph.
    fn graph_mut(&mut self) -> Option<&mut GraphRun> {
        None
    }
}
