//! [`Event`]: what a run reports while it happens, and [`EventRecord`]:
//! an event as sinks receive it, stamped with its run, its place in the
//! run's sequence and its time.

mod display;
pub(crate) mod log;
mod record;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, MessageId, ToolCall, ToolResult, Usage};

pub use record::EventRecord;

/// Something that happened during a run. Every event carries the `path` of
/// the workflow or agent it concerns (`outer/inner/agent`), so events from
/// nested workflows say where they come from.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A workflow run began.
    RunStarted {
        /// The workflow's path.
        path: Arc<str>,
        /// Number of participants.
        participants: usize,
    },
    /// A workflow run ended.
    RunFinished {
        /// The workflow's path.
        path: Arc<str>,
        /// How it ended.
        status: FinalStatus,
        /// What the status says in words: the stop condition that held,
        /// the questions waiting, the error a failed run ended with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Tokens spent in this run.
        usage: Usage,
        /// Agent turns taken in this run.
        turns: u64,
        /// Wall time of the run, in milliseconds.
        elapsed_ms: f64,
        /// What the run spent — turns, model calls, tool calls, tokens,
        /// cost — per agent and in total (a failed run's too).
        // Boxed: the widest field of any event, and every event is as
        // wide as the widest (a server keeps each run's events).
        #[serde(default)]
        stats: Box<crate::stats::RunStats>,
    },
    /// An agent began a turn.
    AgentStarted {
        /// The agent's path.
        path: Arc<str>,
        /// Messages newly taken from its inbox for this turn.
        batch: usize,
    },
    /// An agent finished a turn.
    AgentFinished {
        /// The agent's path.
        path: Arc<str>,
        /// Messages it produced.
        produced: usize,
        /// Wall time of the turn, in milliseconds.
        elapsed_ms: f64,
    },
    /// An agent's turn failed (it may still be retried: see
    /// [`Event::Retry`]; a run that gives up ends with
    /// [`Event::RunFinished`] and [`FinalStatus::Failed`]).
    AgentFailed {
        /// The agent's path.
        path: Arc<str>,
        /// The kind of failure, as retry policies name it.
        kind: crate::run_error::ErrorKind,
        /// What went wrong.
        error: String,
        /// The attempt that failed (1 for the first).
        attempt: u32,
    },
    /// An agent produced a message.
    MessageProduced {
        /// The producing agent's path.
        path: Arc<str>,
        /// The message.
        message: Arc<Message>,
    },
    /// A message entered an inbox.
    MessageDelivered {
        /// The workflow's path.
        path: Arc<str>,
        /// The message.
        message: MessageId,
        /// The receiving participant.
        to: String,
    },
    /// A message left an inbox without being read (expired, overflow).
    MessageDropped {
        /// The workflow's path.
        path: Arc<str>,
        /// The message.
        message: MessageId,
        /// The participant whose inbox dropped it.
        to: String,
        /// Why.
        reason: String,
    },
    /// A message reached a full inbox whose overflow policy is `reject`:
    /// it waits outside the inbox (backpressure) and is delivered, with
    /// [`Event::MessageDelivered`], as soon as a turn takes room.
    MessageHeld {
        /// The workflow's path.
        path: Arc<str>,
        /// The message.
        message: MessageId,
        /// The participant whose inbox is full.
        to: String,
        /// The inbox's capacity.
        capacity: usize,
    },
    /// An agent asked for a tool call.
    ToolCall {
        /// The agent's path.
        path: Arc<str>,
        /// The call.
        call: ToolCall,
    },
    /// A tool call returned.
    ToolResult {
        /// The agent's path.
        path: Arc<str>,
        /// The result.
        result: ToolResult,
    },
    /// An agent handed control to another.
    Handoff {
        /// The agent's path.
        path: Arc<str>,
        /// Who takes over.
        to: String,
    },
    /// A planning agent made a plan (before running it).
    Plan {
        /// The planning agent's path.
        path: Arc<str>,
        /// The plan as text (steps and their dependency graph).
        plan: String,
    },
    /// A ledger-keeping manager (the Magentic preset's) wrote a ledger:
    /// the task ledger (facts and plan) when it plans or replans, a
    /// progress ledger after every turn of the team.
    Ledger {
        /// The manager's path.
        path: Arc<str>,
        /// Which ledger.
        kind: LedgerKind,
        /// The ledger in words, for the console (one line per item).
        summary: String,
        /// The ledger as the manager wrote it (JSON, matching its schema).
        ledger: serde_json::Value,
    },
    /// An agent chose who runs next (a selector picking a speaker).
    Selected {
        /// The choosing agent's path.
        path: Arc<str>,
        /// The chosen node(s).
        next: Vec<String>,
    },
    /// An agent asked the caller for input; the run will wait for it.
    InputRequested {
        /// The asking agent's path.
        path: Arc<str>,
        /// The request's id, to answer it by.
        request: String,
        /// The question.
        prompt: String,
    },
    /// A checkpoint of the run was saved.
    CheckpointSaved {
        /// The workflow's path.
        path: Arc<str>,
        /// The run's id.
        run_id: String,
        /// The checkpoint's id.
        checkpoint: String,
        /// Supersteps completed when it was taken.
        superstep: u64,
        /// Encoded size in bytes.
        bytes: usize,
    },
    /// A superstep of a graph run began.
    SuperstepStarted {
        /// The workflow's path.
        path: Arc<str>,
        /// Its number, from 1.
        superstep: u64,
        /// The nodes it runs.
        nodes: Vec<String>,
    },
    /// A superstep of a graph run ended (every turn in it finished).
    SuperstepCompleted {
        /// The workflow's path.
        path: Arc<str>,
        /// Its number.
        superstep: u64,
    },
    /// A failed turn will be tried again.
    Retry {
        /// The agent's path.
        path: Arc<str>,
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// Why it failed.
        error: String,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: f64,
    },
    /// Something worth knowing that did not stop the run.
    Warning {
        /// Where.
        path: Arc<str>,
        /// What.
        text: String,
    },
    /// An event of the agent's own (seed 002's custom events): emitted by
    /// [`RunContext::emit_custom`](crate::RunContext::emit_custom), or by
    /// the `emit_event` tool of a config.
    Custom {
        /// The agent's path.
        path: Arc<str>,
        /// The event's name.
        name: String,
        /// What it carries.
        #[serde(default)]
        data: serde_json::Value,
    },
    /// An event sink could not keep up and dropped events (see
    /// [`EventSink`](crate::sink::EventSink)); written where they are missing.
    EventsDropped {
        /// The path of the first event dropped.
        path: Arc<str>,
        /// How many were dropped here.
        count: u64,
    },
    /// A piece of a model's answer text, as it streamed in (before the
    /// agent's turn ends). The pieces of one model call, joined, are the
    /// text of its answer.
    TextDelta {
        /// The agent's path.
        path: Arc<str>,
        /// The piece of text.
        text: String,
    },
    /// A piece of a tool call the model is writing, as it streamed in.
    ToolArgumentsDelta {
        /// The agent's path.
        path: Arc<str>,
        /// Which call of the answer it belongs to (from 0).
        index: usize,
        /// The call's id, on the piece that carries it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The tool's name, on the piece that carries it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A piece of the arguments' JSON text.
        arguments: String,
    },
    /// An agent sent a request to its model (each attempt of a call that
    /// is retried starts anew).
    ModelCallStarted {
        /// The agent's path.
        path: Arc<str>,
        /// The model's name.
        model: String,
        /// The attempt (1 for the first).
        attempt: u32,
    },
    /// A model call ended: answered (read to its end, when streamed), or
    /// failed for good.
    ModelCallFinished {
        /// The agent's path.
        path: Arc<str>,
        /// The model's name.
        model: String,
        /// The attempt that ended it (1 for the first).
        attempt: u32,
        /// From the start of that attempt to the end of the answer, in
        /// milliseconds.
        latency_ms: f64,
        /// Tokens used, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Whether `usage` is an estimate (the server did not say).
        #[serde(default)]
        usage_estimated: bool,
        /// What the call cost in USD, when the model has `pricing`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        /// Why the call failed, if it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A model call's attempt failed and will be tried again (an HTTP
    /// error, a timeout), as it happens.
    ModelCallRetry {
        /// The agent's path.
        path: Arc<str>,
        /// The model's name.
        model: String,
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// Why it failed.
        error: String,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: f64,
    },
    /// A model of a fallback chain failed for good (after its own
    /// retries) and the next model of the chain takes the call over: the
    /// call's later events name that one, the model that answers.
    ModelFailover {
        /// The agent's path.
        path: Arc<str>,
        /// The model that failed.
        model: String,
        /// Why it failed.
        error: String,
        /// The model that takes the call over.
        next: String,
    },
    /// A tool call began (a handoff or a question to the user is not a
    /// tool call). [`Event::ToolCall`] carries the call's arguments.
    ToolCallStarted {
        /// The calling agent's path.
        path: Arc<str>,
        /// The call's id, as the model gave it.
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// A tool call ended. [`Event::ToolResult`] carries what it gave back.
    ToolCallFinished {
        /// The calling agent's path.
        path: Arc<str>,
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// How long it took, in milliseconds.
        elapsed_ms: f64,
        /// Why it failed, if it did (the model sees the error text as its
        /// result; only a fatal error fails the turn).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A model call waited for its model's shared rate limit
    /// (`rate_limit:`, or a server's `Retry-After` that holds every
    /// caller) before its attempt was sent.
    ModelCallThrottled {
        /// The agent's path.
        path: Arc<str>,
        /// The model's name.
        model: String,
        /// How long it waited, in milliseconds.
        waited_ms: f64,
    },
    /// A running tool call reported how far it got (an MCP server's
    /// `notifications/progress`).
    ToolProgress {
        /// The calling agent's path.
        path: Arc<str>,
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The progress so far (it grows with each report).
        progress: f64,
        /// The progress at which it is done, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What the tool says it is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl Event {
    /// The path of the workflow or agent the event concerns.
    pub fn path(&self) -> &str {
        match self {
            Event::RunStarted { path, .. }
            | Event::RunFinished { path, .. }
            | Event::AgentStarted { path, .. }
            | Event::AgentFinished { path, .. }
            | Event::AgentFailed { path, .. }
            | Event::MessageProduced { path, .. }
            | Event::MessageDelivered { path, .. }
            | Event::MessageDropped { path, .. }
            | Event::MessageHeld { path, .. }
            | Event::ToolCall { path, .. }
            | Event::ToolResult { path, .. }
            | Event::Handoff { path, .. }
            | Event::Plan { path, .. }
            | Event::Ledger { path, .. }
            | Event::Selected { path, .. }
            | Event::InputRequested { path, .. }
            | Event::CheckpointSaved { path, .. }
            | Event::SuperstepStarted { path, .. }
            | Event::SuperstepCompleted { path, .. }
            | Event::Retry { path, .. }
            | Event::Warning { path, .. }
            | Event::Custom { path, .. }
            | Event::EventsDropped { path, .. }
            | Event::TextDelta { path, .. }
            | Event::ToolArgumentsDelta { path, .. }
            | Event::ModelCallStarted { path, .. }
            | Event::ModelCallFinished { path, .. }
            | Event::ModelCallRetry { path, .. }
            | Event::ModelFailover { path, .. }
            | Event::ToolCallStarted { path, .. }
            | Event::ToolCallFinished { path, .. }
            | Event::ModelCallThrottled { path, .. }
            | Event::ToolProgress { path, .. } => path,
        }
    }
}

/// Which ledger an [`Event::Ledger`] carries.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// The task ledger: facts given, to look up, to derive, educated
    /// guesses, and the plan.
    Task,
    /// A progress ledger: is the request satisfied, are we in a loop, is
    /// progress being made, who speaks next with what instruction.
    Progress,
}

impl LedgerKind {
    /// The word, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerKind::Task => "task",
            LedgerKind::Progress => "progress",
        }
    }
}

/// How a run ended, as [`Event::RunFinished`] reports it: one word a
/// program can match on (the words are the JSON form).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinalStatus {
    /// Nothing was left to do.
    Completed,
    /// A stop condition (or a budget) held.
    Stopped,
    /// The run was cancelled.
    Cancelled,
    /// The run stopped gracefully and can be resumed.
    Interrupted,
    /// Agents asked the caller for input.
    WaitingForInput,
    /// The run failed.
    Failed,
}

impl FinalStatus {
    /// The word, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Completed => "completed",
            FinalStatus::Stopped => "stopped",
            FinalStatus::Cancelled => "cancelled",
            FinalStatus::Interrupted => "interrupted",
            FinalStatus::WaitingForInput => "waiting_for_input",
            FinalStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for FinalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON Schema of one line of `--events jsonl`: an [`EventRecord`]
/// (its stamp and the event, whose `type` names the kind). Committed as
/// `schema/events.schema.json`; `troupe schema --events` prints it.
#[cfg(feature = "schema")]
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(EventRecord).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), "troupe event".into());
        object.insert(
            "description".into(),
            "One line of `troupe run --events jsonl`: an event of a run, stamped with the \
             run's id, its number in the run's sequence and its time."
                .into(),
        );
    }
    schema
}
