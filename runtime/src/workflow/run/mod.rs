//! The supervisor of one workflow run — [`RunTask`], a plain task, for a
//! workflow sharing its actors; [`RunActor`], a ractor actor its own
//! actors link to, for one that keeps none — a thin driver over the state
//! it owns, each part with one owner and in its own file —
//!
//! - `participants`: each participant's actor, context, retries and turn
//!   state, from which the turns in flight are derived;
//! - `inboxes`: inboxes and delivery (routing, batches, drop reports);
//!   `wake`: the wake-up for partial batches;
//! - `slots`: the run's thread, taken apart into slots and put back
//!   together by one piece of code;
//! - `graph_run`: a graph's cursor and the superstep under way;
//! - `checkpoints`: when a checkpoint is due, and saving it;
//! - `watcher`: cancellation, deadline, timeout and external stops;
//! - `phase`: running, stopping or failing; `tally`: what the run produced.
//!
//! The driver's own steps are in `setup` (taking the input in), `turns`
//! (starting and ending turns, retries), `replies` (what a reply changes),
//! `schedule` (who runs next) and `finish` (checkpoints and the result).
//! Keeping the whole state in one actor is what makes quiescence detection
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
mod setup;
mod slots;
mod tally;
mod turns;
mod wake;
mod watcher;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use futures::channel::mpsc;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

use self::checkpoints::Checkpointer;
use self::graph_run::GraphRun;
use self::inboxes::Inboxes;
use self::participants::{Participants, TurnState};
use self::phase::{Failure, Phase};
use self::slots::ThreadSlots;
use self::tally::Tally;
use self::wake::Wake;
use self::watcher::Watcher;
use super::protocol::{InlineTurn, RunAddr, RunMsg, TurnOutcome};
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
    /// Where the result goes.
    pub(crate) reply: oneshot::Sender<Result<RunResult, RunError>>,
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

/// The supervisor actor of one run.
pub(crate) struct RunActor;

/// The state of one run, by owner.
pub(crate) struct RunState {
    spec: Arc<Spec>,
    ctx: RunContext,
    /// Taken when the result is sent: the run is over.
    reply: Option<oneshot::Sender<Result<RunResult, RunError>>>,
    parts: Participants,
    inboxes: Inboxes,
    wake: Wake,
    threads: ThreadSlots,
    graph: Option<GraphRun>,
    tracker: Option<StopTracker>,
    phase: Phase,
    tally: Tally,
    checkpoints: Checkpointer,
    watcher: Watcher,
    /// Turns to start on the next drive, on the thread they have: retries
    /// whose backoff is over, and turns a checkpoint says were under way.
    restart: Vec<usize>,
    /// The run's span, the parent of its supersteps and turns; closed
    /// when the result is handed back.
    span: tracing::Span,
}

impl Actor for RunActor {
    type Msg = RunMsg;
    type State = RunState;
    type Arguments = RunArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RunMsg>,
        args: RunArgs,
    ) -> Result<RunState, ActorProcessingErr> {
        Ok(RunState::start(RunAddr::Actor(myself), args)?)
    }

    async fn post_start(
        &self,
        myself: ActorRef<RunMsg>,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        state.drive(&RunAddr::Actor(myself)).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RunMsg>,
        message: RunMsg,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        if state.reply.is_none() {
            return Ok(()); // finished; late news changes nothing
        }
        let myself = RunAddr::Actor(myself);
        // Taken in before the drive: the handler future does not hold
        // the message while the drive awaits.
        state.take_in(message, &myself);
        state.drive(&myself).await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RunMsg>,
        event: SupervisionEvent,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        if state.reply.is_none() {
            return Ok(());
        }
        let (cell, failure) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (cell, reason),
            _ => return Ok(()),
        };
        if let Some(index) = state.parts.actor_gone(cell.get_id()) {
            let myself = RunAddr::Actor(myself);
            state.actor_lost(index, failure, &myself);
            state.drive(&myself).await;
        }
        Ok(())
    }
}

/// A run's supervisor as a plain task (see [`RunAddr`]): the same state
/// and steps as [`RunActor`], its messages from a mailbox. For workflows
/// that share their agent actors between runs, whose runs link no actor
/// to themselves.
pub(crate) struct RunTask {
    /// Boxed: an `async fn` keeps its argument and the local it is moved
    /// into side by side, and this is most of a waiting run's bytes.
    state: Box<RunState>,
    addr: RunAddr,
    mailbox: mpsc::UnboundedReceiver<RunMsg>,
    /// Turns handed back by their actors, polled here (see `InlineTurn`).
    inline: Vec<InlineTurn>,
}

/// What woke a supervisor task.
enum Woken {
    /// A message (`None`: the mailbox closed).
    Message(Option<RunMsg>),
    /// A turn polled here ended.
    Turn(InlineTurn, TurnOutcome),
}

impl RunTask {
    /// Sets the run up (as [`RunActor`]'s start does); an error says why
    /// it cannot start.
    pub(crate) fn start(args: RunArgs) -> Result<Self, String> {
        let (tx, mailbox) = mpsc::unbounded();
        let addr = RunAddr::Task(tx);
        let state = Box::new(RunState::start(addr.clone(), args)?);
        Ok(RunTask {
            state,
            addr,
            mailbox,
            inline: Vec::new(),
        })
    }

    /// Drives the run to its end: a drive at the start, then one after
    /// each message taken in or turn ended here, until the result is sent.
    pub(crate) async fn run(mut self) {
        let RunTask {
            state,
            addr,
            mailbox,
            inline,
        } = &mut self;
        state.drive(addr).await;
        while state.reply.is_some() {
            // Messages first: what a turn sent before it ended (a nested
            // run's progress) is taken in before its end.
            let woken = std::future::poll_fn(|cx| {
                if let Poll::Ready(message) = mailbox.poll_next_unpin(cx) {
                    return Poll::Ready(Woken::Message(message));
                }
                for k in 0..inline.len() {
                    if let Poll::Ready(outcome) = Pin::new(&mut inline[k]).poll(cx) {
                        return Poll::Ready(Woken::Turn(inline.swap_remove(k), outcome));
                    }
                }
                Poll::Pending
            })
            .await;
            match woken {
                Woken::Message(None) => break,
                Woken::Message(Some(RunMsg::TurnHandedOver(turn))) => {
                    inline.push(turn);
                    // Nothing changed for the run — unless its turns were
                    // cancelled meanwhile, and this one ends just below.
                    if !state.parts.turns_cancelled() {
                        continue;
                    }
                }
                Woken::Message(Some(message)) => state.take_in(message, addr),
                Woken::Turn(turn, outcome) => {
                    // What the turn sent while it was polled to its end (a
                    // nested run's last progress, the spend with it) is in
                    // the mailbox now: taken in before its end, as the
                    // messages-first poll would for a turn on a task.
                    while let Ok(message) = mailbox.try_recv() {
                        match message {
                            RunMsg::TurnHandedOver(t) => inline.push(t),
                            message => state.take_in(message, addr),
                        }
                    }
                    // As a turn's task would: once the run's turns are
                    // cancelled, a turn ends cancelled, whatever it did.
                    let outcome = if state.parts.turns_cancelled() {
                        TurnOutcome::Cancelled
                    } else {
                        outcome
                    };
                    state.turn_done(turn.index, outcome, turn.elapsed(), addr);
                }
            }
            // Turns cut short end now, as their tasks would have — after
            // what they sent before (a nested run's progress, already in
            // the mailbox) is taken in, as the messages-first poll above
            // would have: a cancel that reaches the turns before the
            // watcher's message must not lose the last report.
            if !inline.is_empty() && state.parts.turns_cancelled() {
                while let Ok(message) = mailbox.try_recv() {
                    match message {
                        RunMsg::TurnHandedOver(turn) => inline.push(turn),
                        message => state.take_in(message, addr),
                    }
                }
                for turn in inline.drain(..) {
                    state.turn_done(turn.index, TurnOutcome::Cancelled, turn.elapsed(), addr);
                }
            }
            state.drive(addr).await;
        }
    }
}

impl RunState {
    /// Takes in one message: a turn's end, a nested run's progress, a
    /// wake-up, a retry's end of backoff, or news from the watcher.
    fn take_in(&mut self, message: RunMsg, myself: &RunAddr) {
        match message {
            RunMsg::TurnDone {
                index,
                outcome,
                elapsed,
            } => self.turn_done(index, outcome, elapsed, myself),
            // A supervisor that polls no turn itself (an actor) runs it as
            // a task, as the agent's actor would have.
            RunMsg::TurnHandedOver(turn) => {
                turn.run_as_task(myself.clone(), self.parts.turns_token().clone());
            }
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
            self.parts.cut_backoffs(!self.spec.supersteps());
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
