//! Errors of building a workflow and of using a checkpoint. Why a turn or
//! a run failed is in `run_error.rs`.

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
    /// [`Workflow::with_answer`](crate::Workflow::with_answer) on a
    /// workflow already cloned: its runs share one description, which
    /// changes only before it is shared.
    #[error("workflow '{0}' is shared already: name its answering agents before cloning it")]
    SharedWorkflow(String),
    /// An option names an agent that is not a participant.
    #[error("{option} names '{agent}', which is not a participant")]
    UnknownParticipant {
        /// The option.
        option: String,
        /// The unknown name.
        agent: String,
    },
    /// An inbox setting that cannot apply in a graph run.
    #[error(
        "the inbox of '{agent}' sets {setting}, which a graph run cannot honour: a graph node \
         runs when the graph activates it and reads its whole inbox; drop {setting} or run \
         without the graph"
    )]
    InboxSettingInGraph {
        /// The participant whose inbox sets it.
        agent: String,
        /// The setting (`batch_size` or `max_wait`).
        setting: &'static str,
    },
    /// A shared thread's name is also a participant's or another group's.
    #[error("shared thread name '{0}' is already used by a participant or another shared thread")]
    GroupNameTaken(String),
    /// A retry policy allows no attempt at all.
    #[error(
        "the retry policy of '{agent}' has max_attempts 0: it counts the first attempt too, so it must be at least 1"
    )]
    ZeroAttempts {
        /// The participant (or graph node) the policy is for.
        agent: String,
    },
    /// A stop condition whose limit is 0 would end the run before its first
    /// turn (the input counts as a message).
    #[error(
        "stop condition {condition} would stop the run before anything runs: its limit must be at least 1"
    )]
    ZeroStopLimit {
        /// The condition, as written (`max_messages(0)`).
        condition: String,
    },
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
        source: crate::resumable::scheduler_state::SchedulerStateError,
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
    /// A fork of a run could not be started (see
    /// [`Workflow::fork`](crate::Workflow::fork)).
    #[error("cannot fork run '{run_id}': {reason}")]
    Fork {
        /// The run forked.
        run_id: String,
        /// Why not.
        reason: String,
    },
}
