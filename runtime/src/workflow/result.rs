//! What a run gives back: its [`RunStatus`], its [`RunResult`], and
//! [`RunStream`], a run in the background with its live events.

use std::fmt;
use std::sync::Arc;

use super::request::InputRequest;
use crate::context::EventStream;
use crate::event::{EventRecord, FinalStatus};
use crate::message::{Message, Usage};
use crate::run_error::RunError;
use crate::state::StateSnapshot;
use crate::stop::StopReason;
use crate::store::CheckpointId;
use crate::thread::Thread;

/// How a run ended (when it did not fail).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RunStatus {
    /// Nothing was left to do: no agent could run and nothing was in flight.
    Completed,
    /// A stop condition held.
    Stopped(StopReason),
    /// The run was cancelled through its context.
    Cancelled,
    /// The run stopped gracefully ([`RunContext::stop_gracefully`](crate::RunContext::stop_gracefully)):
    /// the turns under way finished and were checkpointed; [`Workflow::resume`](crate::Workflow::resume)
    /// carries on with whatever was still to do.
    Interrupted,
    /// Agents asked the caller for input; answer with [`Workflow::respond`](crate::Workflow::respond)
    /// (or [`Workflow::respond_in_thread`](crate::Workflow::respond_in_thread)) to go on.
    /// Lists every question still open, those asked inside nested
    /// workflows included (under ids that name the way down); a run ends
    /// so as long as any is open.
    WaitingForInput(Vec<InputRequest>),
}

impl RunStatus {
    /// The status as one word, and what it says besides (the stop
    /// reason, the ids of the questions waiting), as
    /// [`Event::RunFinished`](crate::Event::RunFinished) reports it.
    pub fn final_status(&self) -> (FinalStatus, Option<String>) {
        match self {
            RunStatus::Completed => (FinalStatus::Completed, None),
            RunStatus::Stopped(r) => (FinalStatus::Stopped, Some(r.to_string())),
            RunStatus::Cancelled => (FinalStatus::Cancelled, None),
            RunStatus::Interrupted => (FinalStatus::Interrupted, None),
            RunStatus::WaitingForInput(r) => (
                FinalStatus::WaitingForInput,
                Some(
                    r.iter()
                        .map(|r| r.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ),
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunStatus::Completed => f.write_str("completed"),
            RunStatus::Stopped(r) => write!(f, "stopped ({r})"),
            RunStatus::Cancelled => f.write_str("cancelled"),
            RunStatus::Interrupted => f.write_str("interrupted"),
            RunStatus::WaitingForInput(r) => write!(
                f,
                "waiting for input ({})",
                r.iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

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
