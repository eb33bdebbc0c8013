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

/// Why an agent's turn failed: a [`kind`](AgentError::kind) for retry
/// policies, a message (what it displays), and optionally the error that
/// caused it — modelled on [`std::io::Error`].
///
/// [`AgentError::new`] takes a kind and the whole text; the constructors per
/// kind ([`failed`](AgentError::failed), [`transient`](AgentError::transient),
/// [`model`](AgentError::model), [`timeout`](AgentError::timeout),
/// [`tool`](AgentError::tool), [`node`](AgentError::node),
/// [`cancelled`](AgentError::cancelled), [`workflow`](AgentError::workflow))
/// word it as the engine always has. [`with_source`](AgentError::with_source)
/// attaches a cause (a model client's error with its `Retry-After`, an I/O
/// error): [`std::error::Error::source`] gives it and
/// [`downcast_source`](AgentError::downcast_source) finds a cause of a given
/// type anywhere in the chain. Match on [`kind`](AgentError::kind).
///
/// ```
/// use std::error::Error;
/// use troupe_runtime::{AgentError, ErrorKind};
///
/// let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the pipe broke");
/// let e = AgentError::transient("cannot reach the tool server").with_source(io);
/// assert_eq!(e.to_string(), "transient failure: cannot reach the tool server");
/// assert_eq!(e.kind(), ErrorKind::Transient);
/// let cause = e.downcast_source::<std::io::Error>().unwrap();
/// assert_eq!(cause.kind(), std::io::ErrorKind::BrokenPipe);
/// assert_eq!(e.source().unwrap().to_string(), "the pipe broke");
///
/// let own = AgentError::new(ErrorKind::Tool, "the search index is rebuilding");
/// assert_eq!(own.to_string(), own.message());
/// ```
pub struct AgentError {
    // One pointer: a turn's `Result<Reply, AgentError>` stays as small as
    // its `Reply`, and errors are the cold path.
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    message: String,
    source: Option<BoxError>,
}

impl AgentError {
    /// An error of `kind` displaying `message` as it is.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AgentError {
            inner: Box::new(Inner {
                kind,
                message: message.into(),
                source: None,
            }),
        }
    }

    /// A failure retrying will not fix ([`ErrorKind::Failed`]), displaying
    /// `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    /// A failure worth retrying ([`ErrorKind::Transient`]): "transient
    /// failure: `message`".
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Transient,
            format!("transient failure: {}", message.into()),
        )
    }

    /// The model call failed ([`ErrorKind::Model`]): "model error: `message`".
    pub fn model(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Model, format!("model error: {}", message.into()))
    }

    /// The turn took longer than `after` allowed ([`ErrorKind::Timeout`]):
    /// "timed out after 30s".
    pub fn timeout(after: Duration) -> Self {
        Self::new(ErrorKind::Timeout, format!("timed out after {after:?}"))
    }

    /// Tool `name` failed in a way that ends the turn ([`ErrorKind::Tool`]):
    /// "tool '`name`' failed: `message`".
    pub fn tool(name: &str, message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Tool,
            format!("tool '{name}' failed: {}", message.into()),
        )
    }

    /// Remote node `node` was lost or unreachable ([`ErrorKind::Node`]):
    /// "node '`node`' lost: `message`".
    pub fn node(node: &str, message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Node,
            format!("node '{node}' lost: {}", message.into()),
        )
    }

    /// The turn was cancelled before it finished ([`ErrorKind::Cancelled`]).
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "cancelled")
    }

    /// A nested workflow's run failed ([`ErrorKind::Workflow`]): displays as
    /// the run's error, which is kept as the source (find it with
    /// [`downcast_source::<RunError>`](AgentError::downcast_source)).
    pub fn workflow(run: RunError) -> Self {
        Self::new(ErrorKind::Workflow, run.to_string()).with_source(run)
    }

    /// The same error, caused by `source` (replacing any cause it had).
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// The broad kind, for retry policies.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The text the error displays.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// Takes the attached cause out of the error.
    pub fn into_source(self) -> Option<BoxError> {
        self.inner.source
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
}

impl fmt::Debug for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("AgentError");
        d.field("kind", &self.inner.kind)
            .field("message", &self.inner.message);
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.message)
    }
}

impl StdError for AgentError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.inner.source {
            Some(source) => Some(&**source),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner2);

    #[derive(Debug, thiserror::Error)]
    #[error("inner {0}")]
    struct Inner2(u32);

    #[test]
    fn a_cause_is_found_anywhere_in_the_chain() {
        let e = AgentError::failed("no").with_source(Outer(Inner2(7)));
        assert_eq!(e.downcast_source::<Inner2>().map(|i| i.0), Some(7));
        assert!(e.downcast_source::<Outer>().is_some());
        assert!(e.downcast_source::<std::io::Error>().is_none());
        assert!(
            AgentError::failed("no")
                .downcast_source::<Inner2>()
                .is_none()
        );
    }

    #[test]
    fn attaching_twice_replaces_the_cause_and_keeps_the_error() {
        let e = AgentError::timeout(Duration::from_secs(1))
            .with_source(Inner2(1))
            .with_source(Inner2(2));
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert_eq!(e.to_string(), "timed out after 1s");
        assert_eq!(e.downcast_source::<Inner2>().map(|i| i.0), Some(2));
        let source = e.into_source();
        assert_eq!(source.map(|s| s.to_string()), Some("inner 2".into()));
        // A plain string can be a cause too.
        let text = AgentError::failed("x").with_source("why");
        assert_eq!(text.downcast_source::<Inner2>().map(|i| i.0), None);
        assert_eq!(
            std::error::Error::source(&text).map(|s| s.to_string()),
            Some("why".into())
        );
    }

    #[test]
    fn each_kind_displays_as_it_always_has() {
        let cases = [
            (AgentError::failed("no such file"), "no such file"),
            (AgentError::transient("busy"), "transient failure: busy"),
            (AgentError::model("gone"), "model error: gone"),
            (
                AgentError::timeout(Duration::from_millis(1500)),
                "timed out after 1.5s",
            ),
            (AgentError::tool("grep", "bad"), "tool 'grep' failed: bad"),
            (AgentError::node("b", "down"), "node 'b' lost: down"),
            (AgentError::cancelled(), "cancelled"),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
            assert_eq!(e.message(), text);
        }
        let run = RunError::Runtime {
            workflow: "w".into(),
            reason: "r".into(),
        };
        let nested = AgentError::workflow(run);
        assert_eq!(nested.kind(), ErrorKind::Workflow);
        assert_eq!(nested.to_string(), "workflow 'w': r");
        assert!(nested.downcast_source::<RunError>().is_some());
    }

    #[test]
    fn the_error_is_one_pointer() {
        assert_eq!(size_of::<AgentError>(), size_of::<usize>());
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
