//! [`Workflow`]: agents composed under a router (and, with the graph
//! module, a control-flow graph), run by a supervisor actor, and itself an
//! [`Agent`](crate::Agent).
//!
//! The files, by what they own:
//! - `builder` and `spec`: describing a workflow, and the immutable
//!   description its runs share;
//! - `api`: running it (from a thread, a checkpoint, an answer) and a
//!   workflow as an agent; `result` and `request`: what a run gives back;
//! - `run/`: the supervisor of one run (a task, or an actor when it links
//!   actors of its own), split by the state it owns;
//!   `agent_actor` and `actor_pool`: the actors hosting participants;
//!   `protocol`: what the two kinds of actor say to each other;
//! - `snapshot`, `scheduler_state` and `answer`: what a checkpoint holds,
//!   the scheduler's part of a thread, and answering a pending question;
//!   `snapshot_delta` and `snapshot_refs` write a checkpoint as a delta,
//!   `snapshot_restore` reads a folded chain back;
//!   `summary`: a run as a store describes it, for listing runs;
//!   `fallback`: where a resume carries on from in a damaged store;
//!   `retention`: what a store keeps, and pruning the rest;
//!   `progress`: how a nested run reports its state to the run above it;
//!   `held_reply`: a finished turn's reply kept for its superstep's barrier.

mod actor_pool;
mod agent_actor;
mod answer;
mod api;
mod builder;
mod child_paths;
mod fallback;
mod held_reply;
#[cfg(test)]
mod hot_path_sizes;
pub(crate) mod progress;
mod protocol;
mod request;
mod result;
mod retention;
mod run;
pub(crate) mod scheduler_state;
mod snapshot;
mod snapshot_delta;
#[cfg(test)]
mod snapshot_oracle;
mod snapshot_refs;
mod snapshot_restore;
mod snapshot_value;
mod spec;
mod summary;

pub use api::Workflow;
pub use builder::WorkflowBuilder;
pub use progress::ProgressRelay;
pub use request::InputRequest;
pub use result::{RunResult, RunStatus, RunStream};
pub use retention::{Pruned, Retention, prune};
pub use scheduler_state::{SchedulerState, SchedulerStateError};
pub use summary::{RunSummary, summarize_run, summarize_runs};
