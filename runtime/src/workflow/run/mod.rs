//! The supervisor of one workflow run — [`RunTask`], a plain task reading
//! an ordered mailbox — a thin driver over the state it owns, each part
//! with one owner and in its own file —
//!
//! - `participants`: each participant's actor, context, retries and turn
//!   state, from which the turns in flight are derived;
//! - `waiting`: the turns still waiting after their actor's first poll,
//!   which the run polls beside its mailbox;
//! - `inboxes`: inboxes and delivery (routing, batches, drop reports);
//!   `wake`: the wake-up for partial batches;
//! - `slots`: the run's thread, taken apart into slots and put back
//!   together by one piece of code;
//! - `scheduling`: router, supersteps or dataflow, the one type that tells
//!   them apart; `graph_run`: a graph's cursor and the superstep under way;
//! - `checkpoints`: when a checkpoint is due, and saving it;
//! - `watcher`: cancellation, deadline, timeout and external stops;
//! - `phase`: running, stopping or failing; `tally`: what the run produced.
//!
//! The driver's own steps are in `setup` (taking the input in), `turns`
//! (starting and ending turns, retries), `replies` (what a reply changes),
//! `schedule` (who runs next) and `finish` (checkpoints and the result).
//! Keeping the whole state in one task is what makes quiescence detection
//! exact, a shared thread receive a message once, and a checkpoint a plain
//! copy; participants are lent their thread for a turn as an `Arc`, so a
//! turn cut short never loses it.

mod checkpoints;
mod finish;
mod graph_run;
mod held;
mod history;
mod inboxes;
mod participants;
mod phase;
mod replies;
mod schedule;
mod scheduling;
mod setup;
mod slots;
mod tally;
mod turns;
mod waiting;
mod wake;
mod watcher;

use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use futures::channel::mpsc;
use tokio::sync::oneshot;

use self::checkpoints::Checkpointer;
use self::inboxes::Inboxes;
use self::participants::{Participants, TurnState};
use self::phase::{Failure, Phase};
use self::scheduling::Scheduling;
use self::slots::ThreadSlots;
use self::tally::Tally;
use self::waiting::Waiting;
use self::wake::Wake;
use self::watcher::Watcher;
use super::protocol::{RunAddr, RunMsg, TurnEnd, TurnOutcome};
use super::result::RunResult;
use super::snapshot::Resumed;
use super::spec::Spec;
use crate::context::RunContext;
use crate::progress::Progress;
use crate::resumable::status::RunStatus;
use crate::run_error::RunError;
use crate::stop::{StopReason, StopTracker, Trigger};
use crate::thread::Thread;

/// What a run's supervisor is started with.
pub(crate) struct RunArgs {
    /// The workflow.
    pub(crate) spec: Arc<Spec>,
    /// The thread to run over (empty when resuming).
    pub(crate) thread: Thread,
    /// The run's context, its path already the run's.
    pub(crate) ctx: RunContext,
    /// Where the result goes (see [`RunReply`]).
    pub(crate) reply: RunReply,
    /// Only a top-level run checkpoints: a nested run's state rides in its
    /// parent's.
    pub(crate) top_level: bool,
    /// The checkpoint to carry on from, if resuming.
    pub(crate) resumed: Option<Resumed>,
    /// Where a nested run reports its progress (see `progress`), if the
    /// run above checkpoints.
    pub(crate) progress: Option<Progress>,
    /// The run's `invoke_workflow` span (see `telemetry`).
    pub(crate) span: tracing::Span,
}

/// Where a run's result goes: its result boxed, as the channel keeps
/// room for its value from the start — a `RunResult` inline was ~500
/// bytes held by every run waiting on its models, for the one moment at
/// its end.
pub(crate) type RunReply = oneshot::Sender<Box<Result<RunResult, RunError>>>;

/// The state of one run, by owner.
pub(crate) struct RunState {
    spec: Arc<Spec>,
    ctx: RunContext,
    /// Taken when the result is sent: the run is over.
    reply: Option<RunReply>,
    parts: Participants,
    inboxes: Inboxes,
    wake: Wake,
    threads: ThreadSlots,
    /// How the run picks its next turns (and its graph, if any).
    scheduling: Scheduling,
    tracker: Option<StopTracker>,
    phase: Phase,
    tally: Tally,
    checkpoints: Checkpointer,
    watcher: Watcher,
    /// Turns to start on the next drive, on the thread they have: retries
    /// whose backoff is over, and turns a checkpoint says were under way.
    restart: Vec<usize>,
    /// Turns under way that came back waiting, polled by the run.
    waiting: Waiting,
    /// Turns polled inline (on this task) that ended on their first poll,
    /// taken in after the drive that started them (`settle`).
    ended: Vec<TurnEnd>,
    /// Whether the run's runtime has more than one worker thread.
    parallel: bool,
    /// Set while a superstep (or a dataflow step) starts several turns on
    /// a `parallel` runtime: those go to their actors, to run in parallel,
    /// rather than one after another on this task.
    fanning: bool,
    /// The run's span, the parent of its supersteps and turns; closed
    /// when the result is handed back. Boxed: inline it would put the
    /// state one allocation size class up (`hot_path_sizes`).
    span: Box<tracing::Span>,
}

/// A run's supervisor: a plain task reading its mailbox (see [`RunAddr`])
/// and polling its turns still waiting beside it. A run supervises nothing
/// but its turns, each of which comes back to it through its ticket,
/// ended or waiting, whatever became of its actor.
pub(crate) struct RunTask {
    /// Boxed: an `async fn` keeps its argument and the local it is moved
    /// into side by side, and this is most of a waiting run's bytes.
    state: Box<RunState>,
    addr: RunAddr,
    mailbox: mpsc::UnboundedReceiver<RunMsg>,
}

/// What woke a supervisor task.
enum Woken {
    /// A message (`None`: the mailbox closed).
    Message(Option<RunMsg>),
    /// A turn polled here ended.
    Turn(TurnEnd),
}

impl RunTask {
    /// Sets the run up; an error says why it cannot start.
    pub(crate) fn start(args: RunArgs) -> Result<Self, String> {
        let (addr, mailbox) = RunAddr::new();
        let state = Box::new(RunState::start(addr.clone(), args)?);
        Ok(RunTask {
            state,
            addr,
            mailbox,
        })
    }

    /// Drives the run to its end: a drive at the start, then one after
    /// each message taken in or turn ended here, until the result is sent.
    pub(crate) async fn run(mut self) {
        let RunTask {
            state,
            addr,
            mailbox,
        } = &mut self;
        state.drive(addr).await;
        state.settle(addr, mailbox).await;
        while state.reply.is_some() {
            // Messages first: what a turn sent before it ended (a nested
            // run's progress) is taken in before its end.
            let woken = std::future::poll_fn(|cx| {
                if let Poll::Ready(message) = mailbox.poll_next_unpin(cx) {
                    return Poll::Ready(Woken::Message(message));
                }
                state.waiting.poll_end(cx).map(Woken::Turn)
            })
            .await;
            match woken {
                Woken::Message(None) => break,
                Woken::Message(Some(message)) => {
                    if !state.take_in(message, addr) {
                        continue;
                    }
                }
                Woken::Turn(mut end) => {
                    // What the turn sent while it was polled to its end (a
                    // nested run's last progress, the spend with it) is in
                    // the mailbox now: taken in before its end, as the
                    // messages-first poll does for a turn that ended on
                    // its actor.
                    while let Ok(message) = mailbox.try_recv() {
                        state.take_in(message, addr);
                    }
                    // Once the run's turns are cancelled, a turn ends
                    // cancelled, whatever it did.
                    if state.parts.turns_cancelled() {
                        end.outcome = TurnOutcome::Cancelled;
                    }
                    state.turn_done(end, addr);
                }
            }
            // Turns cut short end now — after what they sent before (a
            // nested run's progress, already in the mailbox) is taken in,
            // as the messages-first poll above would have: a cancel that
            // reaches the turns before the watcher's message must not lose
            // the last report.
            if state.parts.turns_cancelled() && !state.waiting.is_empty() {
                while let Ok(message) = mailbox.try_recv() {
                    state.take_in(message, addr);
                }
                for end in state.waiting.cancel_all() {
                    state.turn_done(end, addr);
                }
            }
            state.drive(addr).await;
            state.settle(addr, mailbox).await;
        }
    }
}

impl RunState {
    /// Takes in the turns the last drive ran inline to their end, and
    /// drives again, until a drive ends none: as if each had come back
    /// through the mailbox — what it sent before it ended (a nested run's
    /// progress) is taken in first.
    async fn settle(&mut self, myself: &RunAddr, mailbox: &mut mpsc::UnboundedReceiver<RunMsg>) {
        while !self.ended.is_empty() {
            while let Ok(message) = mailbox.try_recv() {
                self.take_in(message, myself);
            }
            let mut ended = std::mem::take(&mut self.ended);
            for mut end in ended.drain(..) {
                // Once the run's turns are cancelled, a turn ends
                // cancelled, whatever it did.
                if self.parts.turns_cancelled() {
                    end.outcome = TurnOutcome::Cancelled;
                }
                self.turn_done(end, myself);
            }
            // Kept for the next drive's turns (taking them in starts none).
            self.ended = ended;
            if self.parts.turns_cancelled() && !self.waiting.is_empty() {
                for end in self.waiting.cancel_all() {
                    self.turn_done(end, myself);
                }
            }
            self.drive(myself).await;
        }
    }

    /// Takes in one message: a turn back from its actor, a nested run's
    /// progress, a wake-up, a retry's end of backoff, or news from the
    /// watcher. Returns whether the run may have changed (a turn come back
    /// waiting changes nothing — unless the run's turns were cancelled
    /// meanwhile, and it ends at once).
    fn take_in(&mut self, message: RunMsg, myself: &RunAddr) -> bool {
        match message {
            RunMsg::Turn(back) => match back.into_end() {
                Ok(end) => self.turn_done(end, myself),
                Err(waiting) => {
                    self.waiting.push(waiting);
                    return self.parts.turns_cancelled();
                }
            },
            RunMsg::Progress {
                index,
                seq,
                thread,
                spent,
            } => {
                if let Some(spent) = spent {
                    self.fold_reported(index, seq, &spent);
                }
                // News of a turn under way: the run checkpoints (or
                // reports upward) with it.
                if self.parts.progressed(index, seq, *thread) {
                    self.checkpoints.request();
                }
            }
            RunMsg::Wake { generation } => {
                if self.wake.woke(generation) {
                    self.inboxes.mark_all_waiting();
                }
            }
            RunMsg::Retry { index } => self.retry_now(index),
            RunMsg::Timeout => {
                if let Some(reason) = self.observe(Trigger::Timeout) {
                    self.stop_now(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Deadline => self.stop_now(RunStatus::Stopped(StopReason {
                condition: "deadline".into(),
                detail: "the run context's deadline passed".into(),
            })),
            RunMsg::External => {
                if let Some(reason) = self.observe(Trigger::External) {
                    self.phase.stop_gracefully(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Cancel => self.stop_now(RunStatus::Cancelled),
            RunMsg::GracefulStop => self.stop_gracefully(),
        }
        true
    }

    /// Turns the run waits for before it can end: turns under way, retries
    /// backing off, and a wake-up for a partial batch when nothing else
    /// is under way.
    fn in_flight(&self) -> usize {
        self.parts.in_flight() + usize::from(self.wake.is_held())
    }

    /// Shows the stop condition what happened; `Some` when it holds.
    fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        self.tracker.as_mut().and_then(|t| t.observe(trigger))
    }

    /// Stops now with `status` (see [`Phase::stop_now`]), ending the turns
    /// under way.
    fn stop_now(&mut self, status: RunStatus) {
        self.phase.stop_now(status);
        self.interrupt();
    }

    /// Stops gracefully (unless the run is ending already): no new turn
    /// starts, the turns under way finish, retries still backing off run
    /// again on resume, and the run ends as [`RunStatus::Interrupted`].
    fn stop_gracefully(&mut self) {
        if self.phase.is_running() {
            self.phase.stop_gracefully(RunStatus::Interrupted);
            self.parts.cut_backoffs(self.scheduling.cut_short());
            self.wake.release();
        }
    }

    /// Fails with `failure`, ending the turns under way.
    fn fail(&mut self, failure: Failure) {
        self.phase.fail(failure);
        self.interrupt();
    }

    /// Ends every turn under way now, every retry still backing off, and
    /// the wait for a partial batch.
    fn interrupt(&mut self) {
        self.parts.cancel_turns();
        self.wake.release();
    }

    /// Participant `index`'s path, for errors.
    fn agent_path(&self, index: usize) -> String {
        self.parts.ctx(index).path().to_string()
    }

    /// Whether participant `index` has a turn under way (or backing off).
    fn busy(&self, index: usize) -> bool {
        self.parts.state(index).is_in_flight()
    }

    /// Whether participant `index`'s turn is under way on its actor.
    fn running(&self, index: usize) -> bool {
        self.parts.state(index) == TurnState::Running
    }
}
