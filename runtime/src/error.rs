//! Errors of agents, and of building and running workflows. An agent's
//! error can hold a nested workflow's [`RunError`] and a run's error the
//! failing agent's [`AgentError`], so both live here.

use std::time::Duration;

use crate::thread::Thread;

/// A workflow could not be built: its parts do not fit together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A workflow needs at least one participant.
    #[error("workflow '{0}' has no participants")]
    NoParticipants(String),
    /// Two participants share a name.
    #[error("two participants are named '{0}': names must be unique within a workflow")]
    DuplicateParticipant(String),
    /// A participant uses a reserved name.
    #[error("a participant may not be named '{0}': the name is reserved")]
    ReservedName(String),
    /// The router does not fit the participants.
    #[error(transparent)]
    Router(#[from] troupe_router::RouterError),
    /// A shared thread names an agent that is not a participant.
    #[error("shared thread '{group}' names '{agent}', which is not a participant")]
    UnknownGroupMember {
        /// The shared thread.
        group: String,
        /// The unknown name.
        agent: String,
    },
    /// An agent was put in two shared threads.
    #[error(
        "'{agent}' is in two shared threads ('{first}' and '{second}'): an agent has one thread"
    )]
    AgentInTwoGroups {
        /// The agent.
        agent: String,
        /// One group.
        first: String,
        /// The other.
        second: String,
    },
    /// The graph does not validate.
    #[error(transparent)]
    Graph(#[from] crate::graph::GraphError),
    /// Participants were given besides a graph, which brings its own.
    #[error("workflow '{0}' has a graph: its participants are the graph's nodes, add agents there")]
    GraphAndParticipants(String),
    /// An option names an agent that is not a participant.
    #[error("{option} names '{agent}', which is not a participant")]
    UnknownParticipant {
        /// The option.
        option: String,
        /// The unknown name.
        agent: String,
    },
    /// A shared thread's name is also a participant's or another group's.
    #[error("shared thread name '{0}' is already used by a participant or another shared thread")]
    GroupNameTaken(String),
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
    },
    /// The run took more supersteps than allowed.
    #[error("max supersteps exceeded (limit: {limit})")]
    SuperstepLimit {
        /// The limit.
        limit: u64,
        /// The thread up to the last completed superstep.
        thread: Box<Thread>,
    },
    /// The thread given to the run holds a scheduler state this build
    /// cannot read (written with another layout).
    #[error("workflow '{workflow}': the thread's scheduler state cannot be used: {source}")]
    SchedulerState {
        /// The workflow's path.
        workflow: String,
        /// What is wrong with the state.
        #[source]
        source: crate::workflow::SchedulerStateError,
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

impl RunError {
    /// The thread as it was when the run failed, if it got that far.
    pub fn thread(&self) -> Option<&Thread> {
        match self {
            RunError::AgentFailed { thread, .. }
            | RunError::AgentPanicked { thread, .. }
            | RunError::AgentLost { thread, .. }
            | RunError::LoopLimit { thread, .. }
            | RunError::SuperstepLimit { thread, .. } => Some(thread),
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
            | RunError::SuperstepLimit { thread, .. } => Some(*thread),
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

/// Why a run could not resume from a checkpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The store has no such checkpoint (or none for the run).
    #[error("no checkpoint {id} for run '{run_id}'")]
    NotFound {
        /// The run.
        run_id: String,
        /// The checkpoint asked for, or "at all".
        id: String,
    },
    /// The checkpoint was taken by a workflow of another shape.
    #[error(
        "checkpoint {id} of run '{run_id}' belongs to another workflow topology (hash {found:016x}, this workflow's is {expected:016x})"
    )]
    OtherTopology {
        /// The run.
        run_id: String,
        /// The checkpoint.
        id: String,
        /// This workflow's hash.
        expected: u64,
        /// The checkpoint's.
        found: u64,
    },
    /// The checkpoint's encoding is of a version this build does not read.
    #[error(
        "checkpoint {id} of run '{run_id}' has format version {found}, this build reads version {expected}"
    )]
    UnknownVersion {
        /// The run.
        run_id: String,
        /// The checkpoint.
        id: String,
        /// The version read here.
        expected: u32,
        /// The checkpoint's.
        found: u32,
    },
    /// The checkpoint's bytes are damaged.
    #[error("checkpoint {id} of run '{run_id}' is corrupt: {reason}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// The checkpoint.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// The scheduler's state in the checkpoint cannot be carried on from:
    /// written with another layout, or not fitting the workflow it claims
    /// to be of. The run is refused rather than started afresh.
    #[error(
        "checkpoint {id} of run '{run_id}' has a scheduler state this workflow cannot use: {source}"
    )]
    SchedulerState {
        /// The run.
        run_id: String,
        /// The checkpoint.
        id: String,
        /// What is wrong with the state.
        #[source]
        source: crate::workflow::SchedulerStateError,
    },
    /// The store failed.
    #[error("checkpoint store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// No pending request has this id.
    #[error("run '{run_id}' has no pending input request '{request}' (pending: {pending})")]
    UnknownRequest {
        /// The run.
        run_id: String,
        /// The request asked for.
        request: String,
        /// The pending requests.
        pending: String,
    },
    /// The workflow has no checkpoint store to resume from.
    #[error("workflow '{0}' has no checkpoint store")]
    NoStore(String),
}

/// The broad kind of an [`AgentError`], for retry policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A failure retrying will not fix.
    Failed,
    /// A failure that may pass (rate limit, a dropped connection).
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
    Cancelled,
}

/// Why an agent's turn failed.
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

    /// The broad kind, for retry policies.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AgentError::Failed(_) => ErrorKind::Failed,
            AgentError::Transient(_) => ErrorKind::Transient,
            AgentError::Timeout(_) => ErrorKind::Timeout,
            AgentError::Model(_) => ErrorKind::Model,
            AgentError::Tool { .. } => ErrorKind::Tool,
            AgentError::Workflow(_) => ErrorKind::Workflow,
            AgentError::Node { .. } => ErrorKind::Node,
            AgentError::Cancelled => ErrorKind::Cancelled,
        }
    }
}
