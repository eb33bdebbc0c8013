//! What a run owns besides how it picks its next turns: [`RunCore`], the
//! turns' engine that a [`Scheduling`](super::scheduling::Scheduling)
//! drives. Its parts each have one owner (`participants`, `inboxes`,
//! `slots`, `tally`, …); its methods, by concept, are in `turns` (a turn
//! from start to end), `replies` (what a reply changes), `history` (a
//! bounded history) and here (how the run stops).

use std::sync::Arc;

use tokio::sync::oneshot;

use super::checkpoints::Checkpointer;
use super::inboxes::Inboxes;
use super::participants::{Participants, TurnState};
use super::phase::{Failure, Phase};
use super::slots::ThreadSlots;
use super::tally::Tally;
use super::waiting::Waiting;
use super::wake::Wake;
use super::watcher::Watcher;
use crate::context::RunContext;
use crate::resumable::status::RunStatus;
use crate::run_error::RunError;
use crate::stop::{StopReason, StopTracker, Trigger};
use crate::workflow::protocol::TurnEnd;
use crate::workflow::result::RunResult;
use crate::workflow::spec::Spec;

/// Where a run's result goes: its result boxed, as the channel keeps
/// room for its value from the start — a `RunResult` inline was ~500
/// bytes held by every run waiting on its models, for the one moment at
/// its end.
pub(crate) type RunReply = oneshot::Sender<Box<Result<RunResult, RunError>>>;

/// Everything one run owns except its scheduling, by owner.
pub(super) struct RunCore {
    pub(super) spec: Arc<Spec>,
    pub(super) ctx: RunContext,
    /// Taken when the result is sent: the run is over.
    pub(super) reply: Option<RunReply>,
    pub(super) parts: Participants,
    pub(super) inboxes: Inboxes,
    pub(super) wake: Wake,
    pub(super) threads: ThreadSlots,
    pub(super) tracker: Option<StopTracker>,
    pub(super) phase: Phase,
    pub(super) tally: Tally,
    pub(super) checkpoints: Checkpointer,
    pub(super) watcher: Watcher,
    /// Turns to start on the next drive, on the thread they have: retries
    /// whose backoff is over, and turns a checkpoint says were under way.
    pub(super) restart: Vec<usize>,
    /// Turns under way that came back waiting, polled by the run.
    pub(super) waiting: Waiting,
    /// Turns polled inline (on this task) that ended on their first poll,
    /// taken in after the drive that started them (`settle`).
    pub(super) ended: Vec<TurnEnd>,
    /// Whether the run's runtime has more than one worker thread.
    pub(super) parallel: bool,
    /// Set while a superstep (or a dataflow step) starts several turns on
    /// a `parallel` runtime: those go to their actors, to run in parallel,
    /// rather than one after another on this task.
    pub(super) fanning: bool,
    /// The run's span, the parent of its supersteps and turns; closed
    /// when the result is handed back. Boxed: inline it would put the
    /// state one allocation size class up (`hot_path_sizes`).
    pub(super) span: Box<tracing::Span>,
}

impl RunCore {
    /// Turns the run waits for before it can end: turns under way, retries
    /// backing off, and a wake-up for a partial batch when nothing else
    /// is under way.
    #[inline]
    pub(super) fn in_flight(&self) -> usize {
        self.parts.in_flight() + usize::from(self.wake.is_held())
    }

    /// Shows the stop condition what happened; `Some` when it holds.
    pub(super) fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        self.tracker.as_mut().and_then(|t| t.observe(trigger))
    }

    /// Stops now with `status` (see [`Phase::stop_now`]), ending the turns
    /// under way.
    pub(super) fn stop_now(&mut self, status: RunStatus) {
        self.phase.stop_now(status);
        self.interrupt();
    }

    /// Stops gracefully (unless the run is ending already): no new turn
    /// starts, the turns under way finish, retries still backing off
    /// become `cut_short` (they run again on resume), and the run ends as
    /// [`RunStatus::Interrupted`].
    pub(super) fn stop_gracefully(&mut self, cut_short: TurnState) {
        if self.phase.is_running() {
            self.phase.stop_gracefully(RunStatus::Interrupted);
            self.parts.cut_backoffs(cut_short);
            self.wake.release();
        }
    }

    /// Fails with `failure`, ending the turns under way.
    pub(super) fn fail(&mut self, failure: Failure) {
        self.phase.fail(failure);
        self.interrupt();
    }

    /// Ends every turn under way now, every retry still backing off, and
    /// the wait for a partial batch.
    fn interrupt(&mut self) {
        self.parts.cancel_turns();
        self.wake.release();
    }
}
