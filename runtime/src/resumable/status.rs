//! [`RunStatus`]: how a run ended (when it did not fail), as a run's
//! result reports it and a checkpoint keeps it.

use std::fmt;

use super::request::InputRequest;
use crate::event::FinalStatus;
use crate::stop::StopReason;

/// How a run ended (when it did not fail).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
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
