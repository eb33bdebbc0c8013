//! [`PlanError`]: why a plan could not be read, built or compiled, or a
//! planning agent built.

use troupe_runtime::BuildError;
use troupe_runtime::graph::GraphError;

/// A plan that cannot be used. Errors of a text plan carry the (1-based)
/// line they were found on, so a model — or a person — can fix that line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan names no step at all.
    #[error("the plan is empty: it names no step")]
    Empty,
    /// A position of a path holds no step id (`A -> -> B`, `A, -> B`, a
    /// trailing `->`).
    #[error("line {line}: position {position} of the path has an empty step id")]
    EmptyStep {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// The position along the path, from 1.
        position: usize,
    },
    /// A step id with characters a step name cannot have.
    #[error(
        "line {line}: '{id}' is not a valid step id (no spaces, '/', '->' or ',' inside an id)"
    )]
    InvalidId {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// The id as written.
        id: String,
    },
    /// A step id that the engine reserves (`user`).
    #[error("line {line}: '{id}' is reserved and cannot name a step")]
    ReservedId {
        /// The line (0 when the id did not come from a text plan).
        line: usize,
        /// The reserved id as written.
        id: String,
    },
    /// The same alternative twice in one position (`A, A -> B`).
    #[error("line {line}: '{id}' is listed twice in position {position}")]
    DuplicateAlternative {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// The position along the path, from 1.
        position: usize,
        /// The repeated id.
        id: String,
    },
    /// A line whose every edge was already given: it adds nothing, which
    /// is most likely a mistake (paths that merely share a prefix with an
    /// earlier line add at least one edge and are fine).
    #[error(
        "line {line}: the edge {from} -> {to} was already given on line {first_line}, and the line adds no new edge"
    )]
    DuplicateEdge {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// Where the edge came from.
        from: String,
        /// Where it went.
        to: String,
        /// The line that first gave it.
        first_line: usize,
    },
    /// A line of one step that was already in the plan.
    #[error("line {line}: step '{id}' is already in the plan (line {first_line})")]
    DuplicateStep {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// The id of the step named twice.
        id: String,
        /// The line that first named it.
        first_line: usize,
    },
    /// An edge that closes a cycle: a plan is a DAG.
    #[error("line {line}: {} is a cycle; a plan must not loop", cycle.join(" -> "))]
    Cycle {
        /// The line whose edge closed the cycle.
        line: usize,
        /// The cycle, starting and ending at the same step.
        cycle: Vec<String>,
    },
    /// A text plan names a step that was not given.
    #[error("line {line}: unknown step '{id}' (known: {known})")]
    UnknownStep {
        /// The 1-based line of the text plan the error is on.
        line: usize,
        /// The unknown id.
        id: String,
        /// The known ids, comma-separated.
        known: String,
    },
    /// Two steps (or a step and a group's summarizer) share an id.
    #[error("two steps are named '{0}': step ids must be unique")]
    DuplicateId(String),
    /// An action group with no action.
    #[error("action group {group} is empty")]
    EmptyGroup {
        /// The group, from 1.
        group: usize,
    },
    /// A compile option names a step the plan does not have.
    #[error("the option '{option}' names '{id}', which is not a step of the plan")]
    UnknownOptionStep {
        /// The name of the compile option.
        option: String,
        /// The unknown id.
        id: String,
    },
    /// A planning agent lacks a part it needs (a model, agents to run the
    /// steps).
    #[error("planning agent '{agent}' needs {what}")]
    Incomplete {
        /// The planning agent.
        agent: String,
        /// What is missing.
        what: String,
    },
    /// The graph the plan compiled into did not validate.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The workflow the plan compiled into did not build.
    #[error(transparent)]
    Workflow(#[from] BuildError),
}

impl PlanError {
    /// The line of the text plan the error was found on, if it has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            PlanError::EmptyStep { line, .. }
            | PlanError::InvalidId { line, .. }
            | PlanError::DuplicateAlternative { line, .. }
            | PlanError::DuplicateEdge { line, .. }
            | PlanError::DuplicateStep { line, .. }
            | PlanError::Cycle { line, .. }
            | PlanError::UnknownStep { line, .. } => Some(*line),
            PlanError::ReservedId { line, .. } if *line > 0 => Some(*line),
            _ => None,
        }
    }
}
