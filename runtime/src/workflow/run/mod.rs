//! The supervisor of one workflow run — [`RunTask`], a plain task reading
//! an ordered mailbox — driving the run's state, [`RunState`]: its turns'
//! engine (`core`) and the scheduling that drives it (`scheduling`).
//!
//! Follow a turn by the imports:
//!
//! - `drive`: after every message, the turns that can start start — the
//!   run's restarts and due checkpoints, then its scheduling's drive;
//! - `scheduling`: one [`Schedule`](scheduling::Schedule) type, three
//!   implementations — `router` (no graph), `supersteps` and `dataflow`
//!   (a graph, its cursor in `graph_run`) — each owning its branching:
//!   who runs next, where a reply goes, what a turn cut short becomes;
//! - `turns` (on the engine): a turn from its batch to its end — its
//!   actor or the run's own task polls it, `waiting` holds it while it
//!   waits, and its end comes back here (`RunState::turn_done`);
//! - `replies`: what a reply changes; `history`: a bounded history;
//! - `finish`: checkpoints, which need both halves, and the run's end;
//!   `setup`: its start.
//!
//! The engine's parts each have one owner: `participants` (actors,
//! contexts, retries, the turns in flight), `inboxes` and `wake`
//! (routing, batches, the wake-up for partial batches), `slots` (the
//! thread taken apart and put back together), `checkpoints` (when one is
//! due, and saving it), `watcher` (cancellation, deadline, timeout and
//! external stops), `phase` (running, stopping or failing) and `tally`
//! (what the run produced). Keeping the whole state in one task is what
//! makes quiescence detection exact, a shared thread receive a message
//! once, and a checkpoint a plain copy; participants are lent their
//! thread for a turn as an `Arc`, so a turn cut short never loses it.

mod checkpoints;
mod core;
mod drive;
mod finish;
mod held;
mod history;
mod inboxes;
mod participants;
mod phase;
mod replies;
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

use self::core::RunCore;
use self::core::RunReply;
use self::scheduling::{Schedule, Scheduling};
use super::protocol::{RunAddr, RunMsg, TurnEnd, TurnOutcome};
use super::snapshot::Resumed;
use super::spec::Spec;
use crate::context::RunContext;
use crate::progress::Progress;
use crate::resumable::status::RunStatus;
use crate::stop::{StopReason, Trigger};
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

/// The state of one run: its turns' engine, and the scheduling that
/// drives it. Apart, so the scheduling can own its branching and drive
/// the engine as a whole: what only the two together do (a turn's end, a
/// checkpoint, the run's end) is the run's own (`drive`, `finish`).
pub(crate) struct RunState {
    core: RunCore,
    /// How the run picks its next turns (and its graph, if any).
    scheduling: Scheduling,
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
        while state.core.reply.is_some() {
            // Messages first: what a turn sent before it ended (a nested
            // run's progress) is taken in before its end; then the
            // context's stops, as a watching task's message would come
            // after them.
            let woken = std::future::poll_fn(|cx| {
                if let Poll::Ready(message) = mailbox.poll_next_unpin(cx) {
                    return Poll::Ready(Woken::Message(message));
                }
                if let Poll::Ready(stop) = state.core.watcher.poll_stops(&state.core.ctx, cx) {
                    return Poll::Ready(Woken::Message(Some(stop)));
                }
                state.core.waiting.poll_end(cx).map(Woken::Turn)
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
                    state.take_in_sent(addr, mailbox);
                    // Once the run's turns are cancelled, a turn ends
                    // cancelled, whatever it did.
                    if state.core.parts.turns_cancelled() {
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
            if state.core.parts.turns_cancelled() && !state.core.waiting.is_empty() {
                state.take_in_sent(addr, mailbox);
                for end in state.core.waiting.cancel_all() {
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
        while !self.core.ended.is_empty() {
            self.take_in_sent(myself, mailbox);
            let mut ended = std::mem::take(&mut self.core.ended);
            for mut end in ended.drain(..) {
                // Once the run's turns are cancelled, a turn ends
                // cancelled, whatever it did.
                if self.core.parts.turns_cancelled() {
                    end.outcome = TurnOutcome::Cancelled;
                }
                self.turn_done(end, myself);
            }
            // Kept for the next drive's turns (taking them in starts none).
            self.core.ended = ended;
            if self.core.parts.turns_cancelled() && !self.core.waiting.is_empty() {
                for end in self.core.waiting.cancel_all() {
                    self.turn_done(end, myself);
                }
            }
            self.drive(myself).await;
        }
    }

    /// Takes in what was sent to the run and not taken in yet: the
    /// messages in its mailbox, then the context's stops asked for
    /// meanwhile (as a watching task would have sent them, after).
    fn take_in_sent(&mut self, myself: &RunAddr, mailbox: &mut mpsc::UnboundedReceiver<RunMsg>) {
        while let Ok(message) = mailbox.try_recv() {
            self.take_in(message, myself);
        }
        while let Some(stop) = self.core.watcher.take_stops(&self.core.ctx) {
            self.take_in(stop, myself);
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
                    self.core.waiting.push(waiting);
                    return self.core.parts.turns_cancelled();
                }
            },
            RunMsg::Progress {
                index,
                seq,
                thread,
                spent,
            } => {
                if let Some(spent) = spent {
                    self.core.fold_reported(index, seq, &spent);
                }
                // News of a turn under way: the run checkpoints (or
                // reports upward) with it.
                if self.core.parts.progressed(index, seq, *thread) {
                    self.core.checkpoints.request();
                }
            }
            RunMsg::Wake { generation } => {
                if self.core.wake.woke(generation) {
                    self.core.inboxes.mark_all_waiting();
                }
            }
            RunMsg::Retry { index } => self.core.retry_now(index),
            RunMsg::Timeout => {
                if let Some(reason) = self.core.observe(Trigger::Timeout) {
                    self.core.stop_now(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Deadline => self.core.stop_now(RunStatus::Stopped(StopReason {
                condition: "deadline".into(),
                detail: "the run context's deadline passed".into(),
            })),
            RunMsg::External => {
                if let Some(reason) = self.core.observe(Trigger::External) {
                    self.core.phase.stop_gracefully(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Cancel => self.core.stop_now(RunStatus::Cancelled),
            RunMsg::GracefulStop => {
                let cut_short = self.scheduling.cut_short();
                self.core.stop_gracefully(cut_short);
            }
        }
        true
    }

    /// A participant's turn ended: the one way every turn's end is taken
    /// in, whether it ended on its actor, on its first poll here or
    /// polled on beside the mailbox. The engine takes the end in; a reply
    /// goes to the scheduling, which holds it for its superstep's barrier
    /// or has it applied now and takes it on (transitions, or the inbox
    /// marked for the router).
    fn turn_done(&mut self, end: TurnEnd, myself: &RunAddr) {
        let index = end.index;
        let cut_short = self.scheduling.cut_short();
        let Some(reply) = self.core.end_turn(end, cut_short, myself) else {
            return;
        };
        match self.scheduling.hold(index, reply) {
            None => {
                // Finished beside turns still under way: a checkpoint now
                // keeps its reply, so a run resumed from it does not run
                // the turn again (none for runs that take no checkpoint,
                // nor when the superstep's barrier comes next anyway).
                if self.core.parts.in_flight() > 0 && self.core.checkpoints.enabled() {
                    self.core.checkpoints.request();
                }
            }
            Some(reply) => {
                self.scheduling.apply(&mut self.core, index, reply);
                // A nested run without supersteps (a router-only team's
                // conversation, a dataflow graph) reports after every turn:
                // it has no supersteps to report after.
                if self.core.checkpoints.reports() {
                    self.core.checkpoints.request();
                }
            }
        }
    }
}
