//! A graph in supersteps: the activated nodes run together; once every
//! turn of the open superstep is done, its replies are applied in node
//! order (or, interrupted, it is undone and runs again whole), a
//! checkpoint is taken, and the next superstep starts.

use super::graph_run::{Barrier, GraphRun};
use super::schedule::{Drive, Schedule};
use crate::agent::Reply;
use crate::event::Event;
use crate::resumable::status::RunStatus;
use crate::workflow::protocol::RunAddr;
use crate::workflow::run::core::RunCore;
use crate::workflow::run::participants::TurnState;
use crate::workflow::run::phase::Failure;
use crate::workflow::run::replies::Applied;

/// A graph run in supersteps (see the module's documentation).
pub(in crate::workflow::run) struct Supersteps {
    graph: GraphRun,
    /// How many supersteps the run may take (`u64::MAX`: no limit; not
    /// an `Option`, whose tag would put the run's state one allocation
    /// size class up, `hot_path_sizes`).
    limit: u64,
}

/// What one step of the drive did.
enum Step {
    /// Turns are under way, or nothing more can start.
    Stop,
    /// A superstep completed and the state is whole: a checkpoint now.
    Checkpoint,
    /// A superstep opened with no turn to run (all of them had finished
    /// before the run resumed): its barrier comes at once.
    Again,
}

impl Supersteps {
    /// Runs `graph` in supersteps, at most `limit` of them.
    pub(super) fn new(graph: GraphRun, limit: Option<u64>) -> Self {
        Supersteps {
            graph,
            limit: limit.unwrap_or(u64::MAX),
        }
    }

    /// Closes the open superstep if its turns are done and opens the next.
    async fn step(&mut self, core: &mut RunCore, myself: &RunAddr) -> Step {
        if core.in_flight() > 0 {
            return Step::Stop;
        }
        let interrupted = core.phase.is_failing()
            || core.phase.is_stopping_with(&RunStatus::Cancelled)
            || core.parts.turns_cancelled();
        match self.graph.barrier(interrupted) {
            Barrier::None => {}
            Barrier::Undone => return Step::Stop,
            Barrier::Completed {
                superstep,
                mut replies,
            } => {
                for (i, reply) in replies.drain(..) {
                    if let Some(applied) = core.apply_reply(i, reply) {
                        self.graph.take_transitions(core, i, &applied);
                    }
                }
                self.graph.recycle_replies(replies);
                core.ctx.emit_with(|| Event::SuperstepCompleted {
                    path: core.ctx.path().clone(),
                    superstep,
                });
                // Between supersteps nothing is in flight: the state is
                // whole, and the next superstep has not begun. (Checked
                // before asking: without a store there is nothing to
                // save. After the last superstep the run's end saves it,
                // with how the run ended.)
                if core.phase.is_running()
                    && core.checkpoints.enabled()
                    && self.graph.cursor.has_next()
                {
                    return Step::Checkpoint;
                }
            }
        }
        if !core.phase.is_running() || !self.graph.cursor.has_next() {
            return Step::Stop;
        }
        if self.graph.cursor.superstep >= self.limit {
            core.fail(Failure::SuperstepLimit { limit: self.limit });
            return Step::Stop;
        }
        let (superstep, nodes) = self.graph.open_superstep(&core.span);
        core.ctx.emit_with(|| Event::SuperstepStarted {
            path: core.ctx.path().clone(),
            superstep,
            nodes: nodes
                .iter()
                .map(|&i| core.spec.names[i].to_string())
                .collect(),
        });
        core.fanning = core.parallel && nodes.len() > 1;
        for &i in &nodes {
            // A turn that finished before the run resumed has its reply.
            if self.graph.hold_restored(i) {
                continue;
            }
            let batch = core.take_batch(i, true);
            core.start_turn(i, batch, self.graph.superstep_span(), myself)
                .await;
        }
        core.fanning = false;
        self.graph.recycle_nodes(nodes);
        if core.in_flight() == 0 && core.phase.is_running() {
            Step::Again
        } else {
            Step::Stop
        }
    }
}

impl Schedule for Supersteps {
    async fn drive(&mut self, core: &mut RunCore, myself: &RunAddr) -> Drive {
        // The router's readiness does not schedule a graph.
        core.inboxes.clear_dirty();
        loop {
            match self.step(core, myself).await {
                Step::Stop => return Drive::Done,
                Step::Checkpoint => return Drive::Checkpoint,
                Step::Again => {}
            }
        }
    }

    /// Held for the barrier and applied there in node order, so the
    /// superstep's outcome does not depend on which turn finished first.
    #[inline]
    fn hold(&mut self, index: usize, reply: Box<Reply>) -> Option<Box<Reply>> {
        self.graph.hold(index, reply);
        None
    }

    #[inline]
    fn took(&mut self, core: &mut RunCore, index: usize, applied: Applied) {
        self.graph.take_transitions(core, index, &applied);
    }

    /// Idle: the interrupted superstep is undone and runs again whole.
    #[inline]
    fn cut_short(&self) -> TurnState {
        TurnState::Idle
    }

    fn graph(&self) -> Option<&GraphRun> {
        Some(&self.graph)
    }

    fn graph_mut(&mut self) -> Option<&mut GraphRun> {
        Some(&mut self.graph)
    }
}
