//! [`SchedulerState`]: the scheduler's part of a workflow's state in a
//! thread — where a graph run stands, the questions waiting for the
//! caller, the turns to run again — typed, and versioned so that a state
//! this build cannot read is refused by name rather than taken for none.

use serde::{Deserialize, Serialize};

use super::request::InputRequest;
use crate::graph::cursor::Cursor;

/// The layout of [`SchedulerState`] this build writes and reads; bump it
/// when the state changes shape or meaning.
pub(crate) const SCHEDULER_STATE_VERSION: u32 = 1;

/// What a workflow's scheduler needs to carry on where a run left off,
/// kept in [`WorkflowState::scheduler`](crate::WorkflowState::scheduler).
///
/// The engine writes it when a run ends or takes a checkpoint; callers
/// only read it (see [`SchedulerState::requests`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulerState {
    /// The `SCHEDULER_STATE_VERSION` it was written with.
    pub(crate) version: u32,
    /// Where a graph run that stopped midway stands; `None` when there is
    /// no graph or it ran out of nodes (it starts afresh next time).
    pub(crate) graph: Option<Cursor>,
    /// Questions to the caller not answered yet.
    pub(crate) requests: Vec<InputRequest>,
    /// Participants whose turn was under way or cut short when the state
    /// was taken: their input is in their threads, and they run again.
    pub(crate) interrupted: Vec<String>,
}

impl Default for SchedulerState {
    fn default() -> Self {
        SchedulerState {
            version: SCHEDULER_STATE_VERSION,
            graph: None,
            requests: Vec::new(),
            interrupted: Vec::new(),
        }
    }
}

/// A scheduler state this workflow cannot carry on from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchedulerStateError {
    /// It was written with a layout this build does not read.
    #[error("scheduler state has version {found}, this build reads version {expected}")]
    UnknownVersion {
        /// The version read here.
        expected: u32,
        /// The state's.
        found: u32,
    },
    /// Its graph cursor was not made for this workflow's graph.
    #[error("its graph cursor does not fit the workflow's graph ({0})")]
    GraphMismatch(&'static str),
    /// It names a participant the workflow does not have.
    #[error("its {role} names '{name}', who is not a participant")]
    UnknownParticipant {
        /// What names it: an interrupted turn or an input request.
        role: &'static str,
        /// The name.
        name: String,
    },
}

impl SchedulerState {
    /// The `SCHEDULER_STATE_VERSION` it was written with.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The questions to the caller not answered yet.
    pub fn requests(&self) -> &[InputRequest] {
        &self.requests
    }

    /// Refuses a state written with another layout.
    pub(crate) fn check_version(&self) -> Result<(), SchedulerStateError> {
        if self.version == SCHEDULER_STATE_VERSION {
            Ok(())
        } else {
            Err(SchedulerStateError::UnknownVersion {
                expected: SCHEDULER_STATE_VERSION,
                found: self.version,
            })
        }
    }
}
