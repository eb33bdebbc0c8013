//! Where a run stands as a whole — running, stopping with a status, or
//! failing — and how a failure becomes the run's error.

use crate::agent::AgentError;
use crate::resumable::status::RunStatus;
use crate::run_error::RunError;
use crate::stats::RunStats;
use crate::thread::Thread;

/// Why a run fails.
pub(super) enum Failure {
    /// A turn returned an error (and no retry is left).
    Failed { agent: String, source: AgentError },
    /// A turn panicked (and no retry is left).
    Panicked { agent: String, message: String },
    /// A participant's actor went away or could not be started.
    Lost { agent: String, reason: String },
    /// A loop went round more often than its limit.
    LoopLimit { step: String, limit: u32 },
    /// The graph took more supersteps than allowed.
    SuperstepLimit { limit: u64 },
    /// A checkpoint could not be saved (and the store says to fail).
    NotSaved(super::checkpoints::NotSaved),
}

impl Failure {
    /// The run's error, with the thread as it was when the run failed.
    pub(super) fn into_error(self, thread: Thread, stats: RunStats) -> RunError {
        let thread = Box::new(thread);
        let stats = Box::new(stats);
        match self {
            Failure::Failed { agent, source } => RunError::AgentFailed {
                agent,
                source,
                thread,
                stats,
            },
            Failure::Panicked { agent, message } => RunError::AgentPanicked {
                agent,
                message,
                thread,
                stats,
            },
            Failure::Lost { agent, reason } => RunError::AgentLost {
                agent,
                reason,
                thread,
                stats,
            },
            Failure::LoopLimit { step, limit } => RunError::LoopLimit {
                step,
                limit,
                thread,
                stats,
            },
            Failure::SuperstepLimit { limit } => RunError::SuperstepLimit {
                limit,
                thread,
                stats,
            },
            Failure::NotSaved(n) => RunError::CheckpointNotSaved {
                run_id: n.run_id,
                source: Box::new(n.error),
                last_saved: n.last_saved,
                thread,
                stats,
            },
        }
    }
}

/// Where a run stands as a whole.
pub(super) enum Phase {
    /// Turns start as inboxes fill (or graph nodes activate).
    Running,
    /// No new turn starts; the run ends with this status once nothing is
    /// in flight.
    Stopping(RunStatus),
    /// No new turn starts; the run ends with this failure.
    Failing(Failure),
}

impl Phase {
    /// Whether new turns may start.
    #[inline]
    pub(super) fn is_running(&self) -> bool {
        matches!(self, Phase::Running)
    }

    /// Whether the run is failing.
    #[inline]
    pub(super) fn is_failing(&self) -> bool {
        matches!(self, Phase::Failing(_))
    }

    /// Whether the run is stopping with exactly `status`.
    #[inline]
    pub(super) fn is_stopping_with(&self, status: &RunStatus) -> bool {
        matches!(self, Phase::Stopping(s) if s == status)
    }

    /// Stops once the turns under way are done (if nothing stopped the run
    /// yet).
    #[inline]
    pub(super) fn stop_gracefully(&mut self, status: RunStatus) {
        if self.is_running() {
            *self = Phase::Stopping(status);
        }
    }

    /// Stops now with `status`: a failure stands, and a graceful stop
    /// gives way only to a cancel.
    pub(super) fn stop_now(&mut self, status: RunStatus) {
        match self {
            Phase::Failing(_) => {}
            Phase::Stopping(_) if status != RunStatus::Cancelled => {}
            _ => *self = Phase::Stopping(status),
        }
    }

    /// Fails with `failure`, unless the run is failing already.
    pub(super) fn fail(&mut self, failure: Failure) {
        if !self.is_failing() {
            *self = Phase::Failing(failure);
        }
    }
}
