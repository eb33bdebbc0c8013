//! Why a turn or a run failed. [`AgentError`]: an agent's turn — its broad
//! [`ErrorKind`] for retry policies, its text, and (optionally) the error
//! that caused it. [`RunError`]: a workflow run. An agent's error can hold
//! a nested workflow's `RunError` and a run's error the failing agent's
//! `AgentError`, so the two live in one file.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::error::CheckpointError;
use crate::thread::Thread;

/// The broad kind of an [`AgentError`], for retry policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(description = "A kind of failure worth retrying.")
)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A failure retrying will not fix.
    Failed,
    /// A failure that may pass (rate limit, a dropped connection).
    #[cfg_attr(feature = "schema", serde(alias = "rate_limit"))]
    Transient,
    /// The turn took too long.
    Timeout,
    /// The model call failed.
    Model,
    /// A tool failed in a way that ends the turn.
    Tool,
    /// A nested workflow failed.
    Workflow,
    /// A remote node was lost.
    Node,
    /// The turn was cancelled.
    #[cfg_attr(feature = "schema", schemars(skip))]
    Cancelled,
}

/// A boxed error that caused an [`AgentError`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Why an agent's turn failed.
///
/// Any variant can carry the error that caused it ([`with_source`]): a
/// model client's error with its `Retry-After`, an I/O error. It then
/// displays and classifies as before, [`std::error::Error::source`] gives
/// the cause, and [`downcast_source`] finds a cause of a given type. Match
/// variants on [`without_source`], which looks through the attachment.
///
/// ```
/// use std::error::Error;
/// use troupe_runtime::{AgentError, ErrorKind};
///
/// let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the pipe broke");
/// let e = AgentError::transient("cannot reach the tool server").with_source(io);
/// assert_eq!(e.to_string(), "transient failure: cannot reach the tool server");
/// assert_eq!(e.kind(), ErrorKind::Transient);
/// assert!(matches!(e.without_source(), AgentError::Transient(_)));
/// let cause = e.downcast_source::<std::io::Error>().unwrap();
/// assert_eq!(cause.kind(), std::io::ErrorKind::BrokenPipe);
/// assert_eq!(e.source().unwrap().to_string(), "the pipe broke");
/// ```
///
/// [`with_source`]: AgentError::with_source
/// [`downcast_source`]: AgentError::downcast_source
/// [`without_source`]: AgentError::without_source
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A failure retrying will not fix.
    #[error("{0}")]
    Failed(String),
    /// A failure that may pass if tried again.
    #[error("transient failure: {0}")]
    Transient(String),
    /// The turn took longer than allowed.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The model call failed.
    #[error("model error: {0}")]
    Model(String),
    /// A tool failed in a way that ends the turn.
    #[error("tool '{name}' failed: {message}")]
    Tool {
        /// The tool.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// A nested workflow's run failed.
    #[error("{0}")]
    Workflow(Box<RunError>),
    /// The turn was cancelled before it finished.
    #[error("cancelled")]
    Cancelled,
    /// A remote node was lost or unreachable.
    #[error("node '{node}' lost: {message}")]
    Node {
        /// The node.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// Another variant with the error that caused it (made by
    /// [`AgentError::with_source`]): it displays and classifies as that
    /// variant, and its [`source`](std::error::Error::source) is the cause.
    #[error(transparent)]
    WithSource(Box<Sourced>),
}

impl AgentError {
    /// A non-retryable failure with this text.
    pub fn failed(text: impl Into<String>) -> Self {
        AgentError::Failed(text.into())
    }

    /// A failure worth retrying.
    pub fn transient(text: impl Into<String>) -> Self {
        AgentError::Transient(text.into())
    }

    /// The same error, caused by `source` (replacing any cause it had).
    pub fn with_source(self, source: impl Into<BoxError>) -> Self {
        let error = match self {
            AgentError::WithSource(sourced) => sourced.error,
            other => other,
        };
        AgentError::WithSource(Box::new(Sourced {
            error,
            source: source.into(),
        }))
    }

    /// The error itself, without the cause [`with_source`](Self::with_source)
    /// attached: what to match variants on.
    pub fn without_source(&self) -> &AgentError {
        match self {
            AgentError::WithSource(sourced) => &sourced.error,
            other => other,
        }
    }

    /// The error and its attached cause, apart.
    pub fn into_parts(self) -> (AgentError, Option<BoxError>) {
        match self {
            AgentError::WithSource(sourced) => (sourced.error, Some(sourced.source)),
            other => (other, None),
        }
    }

    /// The first error of type `E` in the chain of causes (the attached
    /// cause, its own source, and so on).
    pub fn downcast_source<E: StdError + 'static>(&self) -> Option<&E> {
        let mut next = StdError::source(self);
        while let Some(cause) = next {
            if let Some(found) = cause.downcast_ref::<E>() {
                return Some(found);
            }
            next = cause.source();
        }
        None
    }

    /// The broad kind, for retry policies.
    pub fn kind(&self) -> ErrorKind {
        match self.without_source() {
            AgentError::Failed(_) => ErrorKind::Failed,
            AgentError::Transient(_) => ErrorKind::Transient,
            AgentError::Timeout(_) => ErrorKind::Timeout,
            AgentError::Model(_) => ErrorKind::Model,
            AgentError::Tool { .. } => ErrorKind::Tool,
            AgentError::Workflow(_) => ErrorKind::Workflow,
            AgentError::Node { .. } => ErrorKind::Node,
            AgentError::Cancelled => ErrorKind::Cancelled,
            // `with_source` never nests one attachment in another.
            AgentError::WithSource(sourced) => sourced.error.kind(),
        }
    }
}

/// An [`AgentError`] and the error that caused it (the payload of
/// [`AgentError::WithSource`]).
#[derive(Debug)]
pub struct Sourced {
    error: AgentError,
    source: BoxError,
}

impl Sourced {
    /// The error.
    pub fn error(&self) -> &AgentError {
        &self.error
    }

    /// What caused it.
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.source
    }
}

impl fmt::Display for Sourced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl StdError for Sourced {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner {0}")]
    struct Inner(u32);

    #[test]
    fn a_cause_is_found_anywhere_in_the_chain() {
        let e = AgentError::failed("no").with_source(Outer(Inner(7)));
        assert_eq!(e.downcast_source::<Inner>().map(|i| i.0), Some(7));
        assert!(e.downcast_source::<Outer>().is_some());
        assert!(e.downcast_source::<std::io::Error>().is_none());
        assert!(
            AgentError::failed("no")
                .downcast_source::<Inner>()
                .is_none()
        );
    }

    #[test]
    fn attaching_twice_replaces_the_cause_and_keeps_the_error() {
        let e = AgentError::Timeout(Duration::from_secs(1))
            .with_source(Inner(1))
            .with_source(Inner(2));
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert_eq!(e.to_string(), "timed out after 1s");
        assert_eq!(e.downcast_source::<Inner>().map(|i| i.0), Some(2));
        let (error, source) = e.into_parts();
        assert!(matches!(error, AgentError::Timeout(_)));
        assert_eq!(source.map(|s| s.to_string()), Some("inner 2".into()));
        // A plain string can be a cause too.
        let text = AgentError::failed("x").with_source("why");
        assert_eq!(text.downcast_source::<Inner>().map(|i| i.0), None);
        assert_eq!(
            std::error::Error::source(&text).map(|s| s.to_string()),
            Some("why".into())
        );
    }
}

/// A run failed. Where the run got far enough to have one, the error keeps
/// the thread as it was when the failure happened ([`RunError::thread`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// An agent's turn returned an error.
    #[error("agent '{agent}' failed: {source}")]
    AgentFailed {
        /// The agent's path.
        agent: String,
        /// What it returned.
        #[source]
        source: AgentError,
        /// The thread up to the failure.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// An agent panicked.
    #[error("agent '{agent}' panicked: {message}")]
    AgentPanicked {
        /// The agent's path.
        agent: String,
        /// The panic message.
        message: String,
        /// The thread up to the panic.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// An agent's actor stopped without finishing its turn.
    #[error("agent '{agent}' stopped unexpectedly: {reason}")]
    AgentLost {
        /// The agent's path.
        agent: String,
        /// What the supervisor was told.
        reason: String,
        /// The thread up to the loss.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// A loop went round more often than its limit.
    #[error("max loop iterations exceeded (step: {step}, limit: {limit})")]
    LoopLimit {
        /// The step the loop returns to.
        step: String,
        /// The limit.
        limit: u32,
        /// The thread up to the last completed superstep.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// The run took more supersteps than allowed.
    #[error("max supersteps exceeded (limit: {limit})")]
    SuperstepLimit {
        /// The limit.
        limit: u64,
        /// The thread up to the last completed superstep.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// The thread given to the run holds a scheduler state this build
    /// cannot read (written with another layout).
    #[error("workflow '{workflow}': the thread's scheduler state cannot be used: {source}")]
    SchedulerState {
        /// The workflow's path.
        workflow: String,
        /// What is wrong with the state.
        #[source]
        source: crate::resumable::scheduler_state::SchedulerStateError,
    },
    /// A checkpoint could not be saved and its store says a run then
    /// fails ([`SaveErrors::Fail`](crate::store::SaveErrors::Fail), the
    /// default): the run stopped there.
    #[error("checkpoint of run '{run_id}' not saved: {source}; {}", last_saved_note(.last_saved))]
    CheckpointNotSaved {
        /// The run.
        run_id: String,
        /// The store's error (naming the file or database and the OS's
        /// error).
        #[source]
        source: Box<crate::store::StoreError>,
        /// The last checkpoint of the run that was saved: a resume
        /// carries on from it.
        last_saved: Option<crate::store::CheckpointId>,
        /// The thread when the save failed.
        thread: Box<Thread>,
        /// What the run spent up to the failure.
        stats: Box<crate::stats::RunStats>,
    },
    /// A checkpoint could not be saved, found or used.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The run's actors could not be started or vanished.
    #[error("workflow '{workflow}': {reason}")]
    Runtime {
        /// The workflow's path.
        workflow: String,
        /// What went wrong.
        reason: String,
    },
}

/// What a failed save leaves to resume from.
fn last_saved_note(id: &Option<crate::store::CheckpointId>) -> String {
    match id {
        Some(id) => format!("the last checkpoint saved is {id}, a resume carries on from it"),
        None => "no checkpoint of the run was saved".into(),
    }
}

impl RunError {
    /// The thread as it was when the run failed, if it got that far.
    pub fn thread(&self) -> Option<&Thread> {
        match self {
            RunError::AgentFailed { thread, .. }
            | RunError::AgentPanicked { thread, .. }
            | RunError::AgentLost { thread, .. }
            | RunError::LoopLimit { thread, .. }
            | RunError::SuperstepLimit { thread, .. }
            | RunError::CheckpointNotSaved { thread, .. } => Some(thread),
            RunError::Runtime { .. }
            | RunError::Checkpoint(_)
            | RunError::SchedulerState { .. } => None,
        }
    }

    /// What the run spent up to the failure — turns, model calls, tool
    /// calls, tokens and cost, per agent and in total (the calls of the
    /// failed turn included) — if it got far enough to run any turn.
    pub fn stats(&self) -> Option<&crate::stats::RunStats> {
        match self {
            RunError::AgentFailed { stats, .. }
            | RunError::AgentPanicked { stats, .. }
            | RunError::AgentLost { stats, .. }
            | RunError::LoopLimit { stats, .. }
            | RunError::SuperstepLimit { stats, .. }
            | RunError::CheckpointNotSaved { stats, .. } => Some(stats),
            RunError::Runtime { .. }
            | RunError::Checkpoint(_)
            | RunError::SchedulerState { .. } => None,
        }
    }

    /// Takes the thread out of the error.
    pub fn into_thread(self) -> Option<Thread> {
        match self {
            RunError::AgentFailed { thread, .. }
            | RunError::AgentPanicked { thread, .. }
            | RunError::AgentLost { thread, .. }
            | RunError::LoopLimit { thread, .. }
            | RunError::SuperstepLimit { thread, .. }
            | RunError::CheckpointNotSaved { thread, .. } => Some(*thread),
            RunError::Runtime { .. }
            | RunError::Checkpoint(_)
            | RunError::SchedulerState { .. } => None,
        }
    }

    /// The path of the agent that failed, if an agent did.
    pub fn agent(&self) -> Option<&str> {
        match self {
            RunError::AgentFailed { agent, .. }
            | RunError::AgentPanicked { agent, .. }
            | RunError::AgentLost { agent, .. } => Some(agent),
            _ => None,
        }
    }
}
