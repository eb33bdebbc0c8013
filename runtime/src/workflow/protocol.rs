//! The actor protocol of a run: what its supervisor and its agent actors
//! say to each other.
//!
//! Both sides import this file and never each other: the supervisor lends
//! an agent actor a thread for a turn ([`AgentMsg::Turn`]), and the turn's
//! end comes back as [`RunMsg::TurnDone`] (a nested run's progress on the
//! way as [`RunMsg::Progress`]) — or, for a run's only turn under way, the
//! turn itself comes back still waiting ([`RunMsg::TurnHandedOver`]) and
//! the run polls it to its end; everything else the supervisor hears is
//! timers and its watcher, all through its [`RunAddr`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::mpsc;
use ractor::{ActorCell, ActorRef};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, Reply};
use crate::context::RunContext;
use crate::stats::RunStats;
use crate::thread::Thread;

/// Messages the run's supervisor handles.
pub(crate) enum RunMsg {
    /// A participant's turn ended.
    TurnDone {
        /// The participant.
        index: usize,
        /// How it ended.
        outcome: TurnOutcome,
        /// How long the turn took.
        elapsed: Duration,
    },
    /// A participant's turn, still under way after its actor's first poll,
    /// handed back to be polled to its end by the run (see
    /// [`TurnTicket::hand_over`]).
    TurnHandedOver(InlineTurn),
    /// A nested run, a participant's turn under way, reports where it
    /// stands (see `progress.rs`).
    Progress {
        /// The participant.
        index: usize,
        /// Which of its turns reports; a report of an earlier turn is
        /// ignored.
        seq: u64,
        /// The nested run's thread as a checkpoint would hold it.
        thread: Box<Thread>,
        /// What the turn spent since its last report (or its start): the
        /// run counts it now, with the progress it comes with, so that a
        /// checkpoint holding this report counts it too, once.
        spent: Option<Box<RunStats>>,
    },
    /// A partial batch's max wait may have passed.
    Wake {
        /// Which wake-up this is; older ones are ignored.
        generation: u64,
    },
    /// A failed turn's backoff is over: run it again.
    Retry {
        /// The participant.
        index: usize,
    },
    /// The stop condition's timeout passed.
    Timeout,
    /// The context's deadline passed.
    Deadline,
    /// An external stop handle was set.
    External,
    /// The context was cancelled.
    Cancel,
    /// The context asked for a graceful stop.
    GracefulStop,
}

crate::local_message!(RunMsg);

/// Where a run's supervisor takes its messages, in the order sent.
///
/// A run of a workflow that shares its agent actors between its runs (the
/// default) supervises nothing but its turns, whose tickets report every
/// end ([`TurnTicket`]): its supervisor is a plain task reading a mailbox
/// (`Task`), a few hundred bytes where a ractor actor's four channels,
/// task and handler are ~12 KiB — what thousands of runs waiting on their
/// models at once hold. A run of a workflow that keeps no actors spawns
/// its own, linked to it: its supervisor is a ractor actor (`Actor`),
/// told when one of them fails.
#[derive(Clone)]
pub(crate) enum RunAddr {
    /// A supervisor actor.
    Actor(ActorRef<RunMsg>),
    /// A supervisor task's mailbox.
    Task(mpsc::UnboundedSender<RunMsg>),
}

impl RunAddr {
    /// Sends `msg`; `false` when the run is over (nobody reads it).
    pub(crate) fn send(&self, msg: RunMsg) -> bool {
        match self {
            RunAddr::Actor(a) => a.cast(msg).is_ok(),
            RunAddr::Task(tx) => tx.unbounded_send(msg).is_ok(),
        }
    }

    /// Sends what `make` makes after `delay` (if the run is still there).
    pub(crate) fn send_after(
        &self,
        delay: Duration,
        make: impl FnOnce() -> RunMsg + Send + 'static,
    ) {
        match self {
            RunAddr::Actor(a) => {
                a.send_after(delay, make);
            }
            RunAddr::Task(tx) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = tx.unbounded_send(make());
                });
            }
        }
    }

    /// The supervisor actor's cell, to link actors to: `None` for a task.
    pub(crate) fn cell(&self) -> Option<ActorCell> {
        match self {
            RunAddr::Actor(a) => Some(a.get_cell()),
            RunAddr::Task(_) => None,
        }
    }

    /// Ends the supervisor: an actor stops with its linked actors; a
    /// task's mailbox closes (late news is dropped where it is sent).
    pub(crate) fn stop(&self) {
        match self {
            RunAddr::Actor(a) => {
                a.stop_children(None);
                a.stop(None);
            }
            RunAddr::Task(tx) => tx.close_channel(),
        }
    }
}

/// How a turn ended.
pub(crate) enum TurnOutcome {
    /// The agent replied. Boxed: a reply is large, and it stays where it is
    /// from the agent actor to the supervisor's last use of it.
    Done(Box<Reply>),
    /// The agent returned an error. Boxed, as rare: the supervisor's
    /// message stays small, and so does every future that holds one.
    Failed(Box<AgentError>),
    /// The run's turns were cancelled before this one finished.
    Cancelled,
    /// The agent panicked; the text says how.
    Panicked(String),
    /// The turn never ran: the actor it was sent to stopped with it still
    /// in its inbox.
    Lost,
}

/// What an agent's turn gives, its panic caught.
pub(crate) type TurnResult = std::thread::Result<Result<Reply, AgentError>>;

/// A turn under way: the agent's turn future, its panics caught.
pub(crate) type PendingTurn = Pin<Box<dyn Future<Output = TurnResult> + Send>>;

impl TurnOutcome {
    /// What a turn's result (or its panic) tells the run. A panic fails
    /// the turn, not the actor that took it: the actor may be serving
    /// other runs, whose turns have nothing to do with it; the run whose
    /// turn it was retries it or fails, as when a participant's actor
    /// fails.
    pub(crate) fn of(result: TurnResult) -> Self {
        match result {
            Ok(Ok(reply)) => TurnOutcome::Done(Box::new(reply)),
            Ok(Err(e)) => TurnOutcome::Failed(Box::new(e)),
            Err(panic) => TurnOutcome::Panicked(crate::panic::panic_text(panic)),
        }
    }
}

/// A participant's turn its actor handed back to the run, still waiting
/// (on its model, most often): the run polls it beside its mailbox, with
/// no task of its own, no cancellation future and no message for its end.
/// Only a run's only turn under way comes back so; others run on as tasks,
/// in parallel on a multi-threaded runtime.
pub(crate) struct InlineTurn {
    /// The participant.
    pub(crate) index: usize,
    /// When its actor took it in.
    started: Option<Instant>,
    turn: PendingTurn,
}

impl InlineTurn {
    /// How long the turn has taken so far.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }

    /// Runs the turn on as a task of its own after all, reporting to `run`
    /// (for a supervisor that polls no turn itself).
    pub(crate) fn run_as_task(self, run: RunAddr, turns: CancellationToken) {
        let ticket = TurnTicket {
            run,
            index: self.index,
            started: self.started,
            inline: false,
            timed: self.started.is_some(),
        };
        ticket.run_as_task(self.turn, turns);
    }
}

impl Future for InlineTurn {
    type Output = TurnOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TurnOutcome> {
        self.turn.as_mut().poll(cx).map(TurnOutcome::of)
    }
}

/// A turn's way back to its run, carried by [`AgentMsg::Turn`]: it reports
/// the turn's end exactly once. Dropped without reporting — the actor
/// stopped with the turn still in its inbox, or the task running it was
/// dropped — it reports the turn [`TurnOutcome::Lost`], so a run learns the
/// fate of every turn it started even from an actor it does not supervise
/// (an actor a workflow shares between its runs).
pub(crate) struct TurnTicket {
    /// Where the turn's end goes.
    run: RunAddr,
    /// The participant's index in the run.
    index: usize,
    /// When the actor took the turn in (`None`: not yet).
    started: Option<Instant>,
    /// Whether the turn, if it waits, goes back to the run to be polled
    /// there (see [`InlineTurn`]).
    inline: bool,
    /// Whether the turn's time is measured: only its run's events report
    /// it, so a run nobody listens to reads no clock for it.
    timed: bool,
}

impl TurnTicket {
    /// The ticket of participant `index`'s turn in run `run`; an `inline`
    /// turn that waits is handed back to the run ([`TurnTicket::hand_over`]);
    /// a `timed` one measures how long it takes.
    pub(crate) fn new(run: RunAddr, index: usize, inline: bool, timed: bool) -> Self {
        TurnTicket {
            run,
            index,
            started: None,
            inline,
            timed,
        }
    }

    /// Whether the turn, if it waits, goes back to its run.
    pub(crate) fn is_inline(&self) -> bool {
        self.inline
    }

    /// Hands `turn`, still under way, to its run, which polls it to its
    /// end. The run may be over already; then the turn is dropped with the
    /// message, as nobody needs it.
    pub(crate) fn hand_over(mut self, turn: PendingTurn) {
        let handed = InlineTurn {
            index: self.index,
            started: self.started,
            turn,
        };
        // Handed over: the run learns the turn's end by polling it.
        self.index = usize::MAX;
        self.run.send(RunMsg::TurnHandedOver(handed));
    }

    /// Runs `turn`, still under way, on as a task of its own that reports
    /// its end — `Cancelled` as soon as `turns` is, whatever the turn does.
    pub(crate) fn run_as_task(self, turn: PendingTurn, turns: CancellationToken) {
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                _ = turns.cancelled() => TurnOutcome::Cancelled,
                r = turn => TurnOutcome::of(r),
            };
            self.report(outcome);
        });
    }

    /// Marks the turn as taken in by its actor now: its time runs from
    /// here (if it is measured at all).
    pub(crate) fn start(&mut self) {
        if self.timed {
            self.started = Some(Instant::now());
        }
    }

    /// Sends the turn's outcome to its run. The run may be over already;
    /// then nobody needs it.
    pub(crate) fn report(mut self, outcome: TurnOutcome) {
        self.send(outcome);
    }

    fn send(&mut self, outcome: TurnOutcome) {
        let elapsed = self.started.map(|s| s.elapsed()).unwrap_or_default();
        self.run.send(RunMsg::TurnDone {
            index: self.index,
            outcome,
            elapsed,
        });
        // Reported: dropping it now says nothing more.
        self.index = usize::MAX;
    }
}

impl Drop for TurnTicket {
    fn drop(&mut self) {
        if self.index != usize::MAX {
            self.send(TurnOutcome::Lost);
        }
    }
}

/// Messages an agent actor handles.
pub(crate) enum AgentMsg {
    /// Take a turn over this thread, for the run and participant its
    /// ticket names, unless `turns` is cancelled first. The run travels
    /// with the turn: one actor serves every run of a workflow that keeps
    /// its actors (see `actor_pool`), each run sending a participant at most
    /// one turn at a time, so each run's turns of it stay in order.
    Turn {
        /// The participant's thread, lent for the turn.
        thread: Arc<Thread>,
        /// The participant's context.
        ctx: RunContext,
        /// Where the turn's end goes.
        ticket: TurnTicket,
        /// Cancelled when the run's turns must end now.
        turns: CancellationToken,
    },
}

crate::local_message!(AgentMsg);
