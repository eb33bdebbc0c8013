//! Stop flags: how a step ends its plan early — successfully (stop) or as a
//! failure (abort) — and how the caller learns which step did and why.
//!
//! A stop is a [`Content::Stop`] message in the step's reply; every
//! compiled plan carries a stop condition that holds for such a message, so
//! the run finishes the turns under way, starts no further step, and ends
//! `Stopped`. An abort is an error the step's turn returns; the run fails
//! with it, keeping the thread up to the failure.

use troupe_runtime::{AgentError, Content, ErrorKind, Message, RunError, RunResult, StopCondition};

/// The name of the stop condition every compiled plan carries.
pub const PLAN_STOP: &str = "plan_stop";

/// What an abort's error text starts with, so it can be told from other
/// failures.
const ABORT_PREFIX: &str = "plan aborted: ";

/// How a step ended its plan early (the seed's `WorkGraphStopFlags`).
///
/// ```
/// use troupe_planning::StopFlag;
/// use troupe_runtime::{AgentError, Content};
///
/// // A step that decides the plan is done says so in its reply…
/// let done = StopFlag::stop_message("the order is already placed");
/// assert_eq!(done.content, Content::Stop("the order is already placed".into()));
/// // …and one that must give up returns an error.
/// let abort: AgentError = StopFlag::abort_error("the shop is closed");
/// assert_eq!(abort.to_string(), "plan aborted: the shop is closed");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopFlag {
    /// The plan ended early and successfully.
    Stop {
        /// The step that stopped it.
        step: String,
        /// The reason the step gave for raising the flag.
        reason: String,
    },
    /// The plan was aborted: a failure.
    Abort {
        /// The step that aborted it.
        step: String,
        /// The reason the step gave for raising the flag.
        reason: String,
    },
}

impl StopFlag {
    /// A message that ends the plan successfully once its step's turn is
    /// over: put it in the step's reply.
    pub fn stop_message(reason: impl Into<String>) -> Message {
        Message::new("", Content::Stop(reason.into()))
    }

    /// An error that aborts the plan: return it from the step's turn.
    ///
    /// A step retry policy that retries [`ErrorKind::Failed`](troupe_runtime::ErrorKind)
    /// retries aborts too; give such policies a `retry_on` list without it.
    pub fn abort_error(reason: impl Into<String>) -> AgentError {
        AgentError::failed(format!("{ABORT_PREFIX}{}", reason.into()))
    }

    /// The stop condition a compiled plan carries: it holds for a
    /// [`Content::Stop`] message a step produced.
    pub fn condition() -> StopCondition {
        StopCondition::custom(PLAN_STOP, |m: &Message| {
            matches!(m.content, Content::Stop(_))
        })
    }

    /// The stop a finished plan run ended on, if a step stopped it.
    pub fn of_result(result: &RunResult) -> Option<StopFlag> {
        result.messages.iter().rev().find_map(|m| match &m.content {
            Content::Stop(reason) => Some(StopFlag::Stop {
                step: m.source.to_string(),
                reason: reason.clone(),
            }),
            _ => None,
        })
    }

    /// The abort a failed plan run failed with, if a step aborted it (also
    /// inside nested workflows).
    pub fn of_error(error: &RunError) -> Option<StopFlag> {
        let RunError::AgentFailed { agent, source, .. } = error else {
            return None;
        };
        match source.kind() {
            ErrorKind::Failed => {
                source
                    .message()
                    .strip_prefix(ABORT_PREFIX)
                    .map(|reason| StopFlag::Abort {
                        step: agent.rsplit('/').next().unwrap_or(agent).to_string(),
                        reason: reason.to_string(),
                    })
            }
            ErrorKind::Workflow => source
                .downcast_source::<RunError>()
                .and_then(StopFlag::of_error),
            _ => None,
        }
    }

    /// The step that raised the flag.
    pub fn step(&self) -> &str {
        match self {
            StopFlag::Stop { step, .. } | StopFlag::Abort { step, .. } => step,
        }
    }

    /// The reason the step gave for raising the flag.
    pub fn reason(&self) -> &str {
        match self {
            StopFlag::Stop { reason, .. } | StopFlag::Abort { reason, .. } => reason,
        }
    }
}
