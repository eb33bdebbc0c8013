//! What a run has produced so far — its messages, final response, usage,
//! turns, questions to the caller — and the result made of it.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::time::Instant;

use crate::message::{Message, Usage};
use crate::store::CheckpointId;
use crate::thread::Thread;
use crate::workflow::request::InputRequest;
use crate::workflow::result::{RunResult, RunStatus};

/// The run's output and counters.
pub(super) struct Tally {
    /// The final response so far: the last message of the last agent to
    /// speak.
    pub(super) last: Option<Arc<Message>>,
    /// Messages produced in this run, in order.
    pub(super) produced: Vec<Arc<Message>>,
    /// Tokens spent.
    pub(super) usage: Usage,
    /// Turns taken.
    pub(super) turns: u64,
    /// Questions asked of the caller in this run.
    pub(super) waiting: Vec<InputRequest>,
    /// Length of the thread before this run produced anything.
    pub(super) start_len: usize,
    /// When the run started.
    pub(super) started: Instant,
    /// When the run first started, on the wall clock (kept across
    /// resumes).
    pub(super) started_at: SystemTime,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            last: None,
            produced: Vec::new(),
            usage: Usage::default(),
            turns: 0,
            waiting: Vec::new(),
            start_len: 0,
            started: Instant::now(),
            started_at: SystemTime::now(),
        }
    }
}

impl Tally {
    /// The run's result: `thread` and `status` with what was produced,
    /// which is handed over.
    pub(super) fn result(
        &mut self,
        thread: Thread,
        status: RunStatus,
        run_id: &str,
        checkpoint: Option<CheckpointId>,
    ) -> RunResult {
        RunResult {
            thread,
            final_response: self.last.take(),
            messages: std::mem::take(&mut self.produced),
            status,
            usage: self.usage,
            turns: self.turns,
            run_id: run_id.to_string(),
            checkpoint,
        }
    }
}
