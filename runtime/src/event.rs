//! [`Event`]: what a run reports while it happens.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, MessageId, ToolCall, ToolResult, Usage};

/// Something that happened during a run. Every event carries the `path` of
/// the workflow or agent it concerns (`outer/inner/agent`), so events from
/// nested workflows say where they come from.
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
        /// How it ended (see `RunStatus`).
        status: String,
        /// Tokens spent in this run.
        usage: Usage,
        /// Agent turns taken in this run.
        turns: u64,
        /// Wall time of the run, in milliseconds.
        elapsed_ms: f64,
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
    /// An event sink could not keep up and dropped events (see
    /// [`EventSink`](crate::EventSink)); written where they are missing.
    EventsDropped {
        /// The path of the first event dropped.
        path: Arc<str>,
        /// How many were dropped here.
        count: u64,
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
            | Event::MessageProduced { path, .. }
            | Event::MessageDelivered { path, .. }
            | Event::MessageDropped { path, .. }
            | Event::MessageHeld { path, .. }
            | Event::ToolCall { path, .. }
            | Event::ToolResult { path, .. }
            | Event::Handoff { path, .. }
            | Event::Plan { path, .. }
            | Event::Selected { path, .. }
            | Event::InputRequested { path, .. }
            | Event::CheckpointSaved { path, .. }
            | Event::SuperstepStarted { path, .. }
            | Event::SuperstepCompleted { path, .. }
            | Event::Retry { path, .. }
            | Event::Warning { path, .. }
            | Event::EventsDropped { path, .. } => path,
        }
    }
}

/// Shortens text for one console line.
fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ⏎ ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The console form: one readable line per event.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::RunStarted { path, participants } => {
                write!(f, "▶ {path}: run started ({participants} participants)")
            }
            Event::RunFinished {
                path,
                status,
                usage,
                turns,
                elapsed_ms,
            } => write!(
                f,
                "■ {path}: {status} after {turns} turns in {elapsed_ms:.1} ms ({} tokens)",
                usage.total()
            ),
            Event::AgentStarted { path, batch } => write!(f, "  → {path} ({batch} new)"),
            Event::AgentFinished {
                path,
                produced,
                elapsed_ms,
            } => write!(f, "  ← {path}: {produced} message(s) in {elapsed_ms:.1} ms"),
            Event::MessageProduced { path, message } => {
                write!(f, "  💬 {path}: {}", excerpt(&message.text_content(), 160))
            }
            Event::MessageDelivered { path, message, to } => {
                write!(f, "    ✉ {path}: {} → {to}", &message.to_string()[24..])
            }
            Event::MessageHeld {
                path,
                message,
                to,
                capacity,
            } => write!(
                f,
                "    ⏸ {path}: {} held for {to} (inbox full, capacity {capacity})",
                &message.to_string()[24..]
            ),
            Event::MessageDropped {
                path,
                message,
                to,
                reason,
            } => write!(
                f,
                "    ✗ {path}: {} dropped at {to} ({reason})",
                &message.to_string()[24..]
            ),
            Event::ToolCall { path, call } => write!(
                f,
                "  🔧 {path}: {}({})",
                call.name,
                excerpt(&call.arguments, 120)
            ),
            Event::ToolResult { path, result } => write!(
                f,
                "  {} {path}: {} = {}",
                if result.is_error { "⚠" } else { "✓" },
                result.name,
                excerpt(&result.content, 120)
            ),
            Event::Handoff { path, to } => write!(f, "  ⇒ {path} hands off to {to}"),
            Event::InputRequested {
                path,
                request,
                prompt,
            } => write!(f, "  ? {path} asks ({request}): {}", excerpt(prompt, 160)),
            Event::CheckpointSaved {
                path,
                checkpoint,
                superstep,
                bytes,
                ..
            } => write!(
                f,
                "  ⛁ {path}: checkpoint {} after superstep {superstep} ({bytes} bytes)",
                &checkpoint[checkpoint.len().saturating_sub(8)..]
            ),
            Event::Plan { path, plan } => {
                write!(f, "  ✎ {path} plans:")?;
                for line in plan.lines() {
                    write!(f, "\n      {line}")?;
                }
                Ok(())
            }
            Event::Selected { path, next } => write!(f, "  ☞ {path} selects {}", next.join(", ")),
            Event::SuperstepStarted {
                path,
                superstep,
                nodes,
            } => write!(f, "┌ {path}: superstep {superstep} [{}]", nodes.join(", ")),
            Event::SuperstepCompleted { path, superstep } => {
                write!(f, "└ {path}: superstep {superstep} done")
            }
            Event::Retry {
                path,
                attempt,
                error,
                delay_ms,
            } => write!(
                f,
                "  ↻ {path}: attempt {attempt} failed ({error}); retrying in {delay_ms:.0} ms"
            ),
            Event::Warning { path, text } => write!(f, "  ⚠ {path}: {text}"),
            Event::EventsDropped { path, count } => write!(
                f,
                "  ⚠ {path}: {count} event(s) dropped: the event output could not keep up"
            ),
        }
    }
}
