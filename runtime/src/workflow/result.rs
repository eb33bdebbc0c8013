//! What a run gives back: its [`RunResult`] (with its
//! [`RunStatus`](crate::RunStatus)), and [`RunStream`], a run in the
//! background with its live events.

use std::sync::Arc;

use crate::context::EventStream;
use crate::event::EventRecord;
use crate::message::{Message, Usage};
use crate::resumable::RunStatus;
use crate::run_error::RunError;
use crate::state::StateSnapshot;
use crate::store::CheckpointId;
use crate::thread::Thread;

/// What a run gives back.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The updated thread: the conversation, a child thread per participant
    /// and the state to continue from. Append a user message and run again
    /// to carry on.
    pub thread: Thread,
    /// The team's answer: the last message of the last agent to run, or,
    /// when the workflow names answering agents
    /// ([`WorkflowBuilder::answer`](crate::WorkflowBuilder::answer)), the
    /// last message one of them produced (`None` if none spoke).
    pub final_response: Option<Arc<Message>>,
    /// Messages produced in this run, in order.
    pub messages: Vec<Arc<Message>>,
    /// How the run ended.
    pub status: RunStatus,
    /// Tokens spent in this run (`stats.total`'s, as a [`Usage`]).
    pub usage: Usage,
    /// Agent turns taken in this run that ended with a reply.
    pub turns: u64,
    /// What the run spent — turns, model calls, tool calls, tokens and
    /// cost — per agent (by full path, nested runs' agents included) and
    /// in total. A failed run's is [`RunError::stats`].
    pub stats: crate::stats::RunStats,
    /// The run's id (checkpoints are saved under it).
    pub run_id: String,
    /// The last checkpoint saved, if the workflow has a store.
    pub checkpoint: Option<CheckpointId>,
}

impl RunResult {
    /// The final response's text, or "" if no agent spoke.
    pub fn final_text(&self) -> String {
        self.final_response
            .as_ref()
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default()
    }

    /// The run state the run left (what its turns set with
    /// [`Reply::with_state`](crate::Reply::with_state)), kept in
    /// [`RunResult::thread`] for the next run.
    pub fn state(&self) -> StateSnapshot {
        self.thread
            .state()
            .map(|s| s.scheduler.values())
            .unwrap_or_default()
    }
}

/// A run in the background with its live events.
#[derive(Debug)]
pub struct RunStream {
    events: EventStream,
    handle: tokio::task::JoinHandle<Result<RunResult, RunError>>,
}

impl RunStream {
    pub(super) fn new(
        events: EventStream,
        handle: tokio::task::JoinHandle<Result<RunResult, RunError>>,
    ) -> Self {
        RunStream { events, handle }
    }

    /// The next event; `None` once the run is over and every event was read.
    pub async fn next(&mut self) -> Option<EventRecord> {
        self.events.next().await
    }

    /// Waits for the run's result (events not read yet are dropped).
    pub async fn result(self) -> Result<RunResult, RunError> {
        self.handle.await.unwrap_or_else(|e| {
            Err(RunError::Runtime {
                workflow: String::new(),
                reason: format!("the run's task ended abnormally: {e}"),
            })
        })
    }
}
