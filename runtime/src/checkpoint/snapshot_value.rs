//! [`Snapshot`]: what a checkpoint holds of a run, decoded.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::message::MessageId;
use crate::resumable::status::RunStatus;
use crate::stats::RunStats;
use crate::stop::TrackerState;
use crate::thread::Thread;

/// A run's state between two supersteps: its thread (with every child
/// thread, inbox, and in its `WorkflowState` the scheduler's typed state:
/// the graph's frontier, joins and loop counters, pending requests, turns
/// to run again) and what the run itself counted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    /// The run's thread, put back together.
    pub(crate) thread: Thread,
    /// The stop condition's counters.
    pub(crate) stop: Option<TrackerState>,
    /// What the run spent so far, per agent and in total.
    pub(crate) stats: RunStats,
    /// Turns taken so far.
    pub(crate) turns: u64,
    /// The final response so far.
    pub(crate) last: Option<MessageId>,
    /// How many of the thread's messages were there before this run's
    /// own output (so the result lists only what the run produced).
    pub(crate) start_len: usize,
    /// When the run first started (kept across resumes).
    pub(crate) started_at: SystemTime,
    /// The status the run ended with; `None` in a checkpoint taken while
    /// it was under way. A run resumed from a checkpoint of a run that
    /// stopped on its stop condition ends so again, running nothing more.
    pub(crate) status: Option<RunStatus>,
}
