//! The actor protocol of a run: what its supervisor and its agent actors
//! say to each other.
//!
//! Both sides import this file and never each other: the supervisor lends
//! an agent actor a thread for a turn ([`AgentMsg::Turn`]), and the turn's
//! end comes back as [`RunMsg::TurnDone`] (a nested run's progress on the
//! way as [`RunMsg::Progress`]); everything else the supervisor hears is
//! timers and its watcher.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
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
}

/// Messages an agent actor handles.
pub(crate) enum AgentMsg {
    /// Take a turn over this thread, for run `run` (whose participant
    /// `index` this actor is), unless `turns` is cancelled first. The run
    /// travels with the turn: an actor may serve several runs in turn (see
    /// `actor_pool`).
    Turn {
        /// The participant's thread, lent for the turn.
        thread: Arc<Thread>,
        /// The participant's context.
        ctx: RunContext,
        /// The participant's index in the run.
        index: usize,
        /// Where the turn's end goes.
        run: ActorRef<RunMsg>,
        /// Cancelled when the run's turns must end now.
        turns: CancellationToken,
    },
    /// The turn task caught a panic; the actor fails with it.
    Panicked(String),
}

crate::local_message!(AgentMsg);
