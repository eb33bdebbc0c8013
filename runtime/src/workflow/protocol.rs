//! The actor protocol of a run: what its supervisor and its agent actors
//! say to each other.
//!
//! Both sides import this file and never each other: the supervisor lends
//! an agent actor a thread for a turn ([`AgentMsg::Turn`]), and the turn's
//! end comes back as [`RunMsg::TurnDone`] (a nested run's progress on the
//! way as [`RunMsg::Progress`]); everything else the supervisor hears is
//! timers and its watcher, all through its [`RunAddr`].

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use ractor::{ActorCell, ActorRef};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, Reply};
use crate::context::RunContext;
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
    /// A nested run, a participant's turn under way, reports where it
    /// stands (see `workflow/progress.rs`).
    Progress {
        /// The participant.
        index: usize,
        /// Which of its turns reports; a report of an earlier turn is
        /// ignored.
        seq: u64,
        /// The nested run's thread as a checkpoint would hold it.
        thread: Box<Thread>,
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
}

impl TurnTicket {
    /// The ticket of participant `index`'s turn in run `run`.
    pub(crate) fn new(run: RunAddr, index: usize) -> Self {
        TurnTicket {
            run,
            index,
            started: None,
        }
    }

    /// Marks the turn as taken in by its actor now: its time runs from here.
    pub(crate) fn start(&mut self) {
        self.started = Some(Instant::now());
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
