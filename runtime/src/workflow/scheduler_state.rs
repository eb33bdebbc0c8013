//! [`SchedulerState`]: the scheduler's part of a workflow's state in a
//! thread — where a graph run stands, the questions waiting for the
//! caller, the turns to run again — typed, and versioned so that a state
//! this build cannot read is refused by name rather than taken for none.

use serde::{Deserialize, Serialize};

use super::request::InputRequest;
use super::spec::Spec;
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

    /// Checks that workflow `spec` can carry on from this state: its
    /// version, its graph cursor, the participants it names. A checkpoint
    /// is proven to be of the same workflow (by its topology hash), so
    /// anything here that does not fit is damage.
    pub(crate) fn check(&self, spec: &Spec) -> Result<(), SchedulerStateError> {
        self.check_version()?;
        match (&self.graph, &spec.graph) {
            (Some(_), None) => {
                return Err(SchedulerStateError::GraphMismatch(
                    "the workflow has no graph",
                ));
            }
            (Some(cursor), Some(graph)) if !cursor.fits(graph) => {
                return Err(SchedulerStateError::GraphMismatch(
                    "its tables or waiting nodes do not match the graph's nodes and transitions",
                ));
            }
            _ => {}
        }
        let named = self
            .interrupted
            .iter()
            .map(|n| ("interrupted turn", n))
            .chain(self.requests.iter().map(|r| ("input request", &r.agent)));
        for (role, name) in named {
            if spec.router.index_of(name).is_none() {
                return Err(SchedulerStateError::UnknownParticipant {
                    role,
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }
}
