//! The actor protocol of a run: what its supervisor and its agent actors
//! say to each other.
//!
//! Both sides import this file and never each other: the supervisor lends
//! an agent actor a thread for a turn ([`AgentMsg::Turn`]), and the turn
//! comes back by one road, [`RunMsg::Turn`] — ended on the actor's first
//! poll, or still waiting, for the run to poll to its end ([`TurnBack`]);
//! a nested run's progress comes on the way as [`RunMsg::Progress`].
//! Everything else the supervisor hears is timers and its watcher, all
//! through its [`RunAddr`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::mpsc;
use tokio::time::Instant;

use crate::agent::{AgentError, Reply};
use crate::context::RunContext;
use crate::stats::RunStats;
use crate::thread::Thread;

/// Messages the run's supervisor handles.
pub(crate) enum RunMsg {
    /// A participant's turn came back from its actor: ended, or still
    /// waiting (see [`TurnBack`]).
    Turn(TurnBack),
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

/// Where a run's supervisor takes its messages, in the order sent: the
/// mailbox of the plain task that is the supervisor (see `run`). A run
/// supervises nothing but its turns, whose tickets report every end
/// ([`TurnTicket`]), so it needs no actor of its own: a task and a channel
/// are a few hundred bytes where a ractor actor's four channels, task and
/// handler are ~12 KiB — what thousands of runs waiting on their models at
/// once hold.
#[derive(Clone)]
pub(crate) struct RunAddr(mpsc::UnboundedSender<RunMsg>);

impl RunAddr {
    /// A supervisor's address and the mailbox it reads.
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<RunMsg>) {
        let (tx, rx) = mpsc::unbounded();
        (RunAddr(tx), rx)
    }

    /// Sends `msg`; `false` when the run is over (nobody reads it).
    pub(crate) fn send(&self, msg: RunMsg) -> bool {
        self.0.unbounded_send(msg).is_ok()
    }

    /// Sends what `make` makes after `delay` (if the run is still there).
    pub(crate) fn send_after(
        &self,
        delay: Duration,
        make: impl FnOnce() -> RunMsg + Send + 'static,
    ) {
        let tx = self.0.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.unbounded_send(make());
        });
    }

    /// Ends the supervisor: its mailbox closes (late news is dropped
    /// where it is sent).
    pub(crate) fn stop(&self) {
        self.0.close_channel();
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

/// A participant's turn back at its run: how it ended on its actor's
/// first poll, or the turn itself, still waiting (on its model, most
/// often), which the run then polls to its end beside its mailbox — no
/// task, no cancellation future and no message for its end. One road for
/// every turn, whatever the agent: the end always reaches the run as a
/// [`TurnEnd`].
pub(crate) struct TurnBack {
    /// The participant.
    index: usize,
    /// When its actor took it in (`None`: not measured).
    started: Option<Instant>,
    /// How it ended, or the turn still waiting.
    state: Result<TurnOutcome, PendingTurn>,
}

impl TurnBack {
    /// The turn's end, or the turn still waiting, for the run to poll.
    pub(crate) fn into_end(self) -> Result<TurnEnd, WaitingTurn> {
        match self.state {
            Ok(outcome) => Ok(TurnEnd {
                index: self.index,
                outcome,
                elapsed: elapsed_since(self.started),
            }),
            Err(turn) => Err(WaitingTurn {
                index: self.index,
                started: self.started,
                turn,
            }),
        }
    }
}

/// How a participant's turn ended, as the run takes it in.
pub(crate) struct TurnEnd {
    /// The participant.
    pub(crate) index: usize,
    /// How it ended.
    pub(crate) outcome: TurnOutcome,
    /// How long it took (zero when not measured).
    pub(crate) elapsed: Duration,
}

/// How long since `started` (zero when not measured).
pub(crate) fn elapsed_since(started: Option<Instant>) -> Duration {
    started.map(|s| s.elapsed()).unwrap_or_default()
}

/// A participant's turn still waiting, polled by its run to its end.
pub(crate) struct WaitingTurn {
    /// The participant.
    index: usize,
    /// When its actor took it in.
    started: Option<Instant>,
    turn: PendingTurn,
}

impl WaitingTurn {
    /// Participant `index`'s turn, started at `started` (when timed) and
    /// still waiting after its first poll on its run's task.
    pub(crate) fn new(index: usize, started: Option<Instant>, turn: PendingTurn) -> Self {
        WaitingTurn {
            index,
            started,
            turn,
        }
    }

    /// The turn ended without finishing: the run's turns were cancelled
    /// (the run drops the turn here).
    pub(crate) fn cancelled(self) -> TurnEnd {
        TurnEnd {
            index: self.index,
            outcome: TurnOutcome::Cancelled,
            elapsed: elapsed_since(self.started),
        }
    }
}

impl Future for WaitingTurn {
    type Output = TurnEnd;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TurnEnd> {
        self.turn.as_mut().poll(cx).map(|result| TurnEnd {
            index: self.index,
            outcome: TurnOutcome::of(result),
            elapsed: elapsed_since(self.started),
        })
    }
}

/// A turn's way back to its run, carried by [`AgentMsg::Turn`]: it brings
/// the turn back exactly once ([`TurnTicket::back`]). Dropped unused — the
/// actor stopped with the turn still in its inbox — it reports the turn
/// [`TurnOutcome::Lost`], so a run learns the fate of every turn it started
/// even from an actor it does not supervise (an actor a workflow shares
/// between its runs).
pub(crate) struct TurnTicket {
    /// Where the turn goes back to.
    run: RunAddr,
    /// The participant's index in the run (`usize::MAX`: gone back).
    index: usize,
    /// When the actor took the turn in (`None`: not yet).
    started: Option<Instant>,
    /// Whether the turn's time is measured: only its run's events report
    /// it, so a run nobody listens to reads no clock for it.
    timed: bool,
}

impl TurnTicket {
    /// The ticket of participant `index`'s turn in run `run`; a `timed`
    /// one measures how long it takes.
    pub(crate) fn new(run: RunAddr, index: usize, timed: bool) -> Self {
        TurnTicket {
            run,
            index,
            started: None,
            timed,
        }
    }

    /// Marks the turn as taken in by its actor now: its time runs from
    /// here (if it is measured at all).
    pub(crate) fn start(&mut self) {
        if self.timed {
            self.started = Some(Instant::now());
        }
    }

    /// Sends the turn back to its run: how it ended (`Ok`), or the turn
    /// still waiting (`Err`), which the run polls to its end. The run may
    /// be over already; then nobody needs it, and it is dropped with the
    /// message.
    pub(crate) fn back(mut self, state: Result<TurnOutcome, PendingTurn>) {
        self.send(state);
    }

    fn send(&mut self, state: Result<TurnOutcome, PendingTurn>) {
        self.run.send(RunMsg::Turn(TurnBack {
            index: self.index,
            started: self.started,
            state,
        }));
        // Gone back: dropping it now says nothing more.
        self.index = usize::MAX;
    }
}

impl Drop for TurnTicket {
    fn drop(&mut self) {
        if self.index != usize::MAX {
            self.send(Ok(TurnOutcome::Lost));
        }
    }
}

/// Messages an agent actor handles.
pub(crate) enum AgentMsg {
    /// Take a turn over this thread, for the run and participant its
    /// ticket names, unless the run's turns (`ctx`'s cancellation) are
    /// cancelled first. The run travels
    /// with the turn: one actor serves every run of a workflow that keeps
    /// its actors (see `actor_pool`), each run sending a participant at most
    /// one turn at a time, so each run's turns of it stay in order.
    Turn {
        /// The participant's thread, lent for the turn.
        thread: Arc<Thread>,
        /// The participant's context.
        ctx: RunContext,
        /// Where the turn goes back to.
        ticket: TurnTicket,
    },
}

crate::local_message!(AgentMsg);
