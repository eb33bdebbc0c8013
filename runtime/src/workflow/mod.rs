//! [`Workflow`]: agents composed under a router (and, with the graph
//! module, a control-flow graph), run by a supervisor actor, and itself an
//! [`Agent`](crate::Agent).
//!
//! The files, by what they own:
//! - `builder` and `spec`: describing a workflow, and the immutable
//!   description its runs share;
//! - `api`: running it (from a thread, a checkpoint, an answer) and a
//!   workflow as an agent; `result`: what a run gives back;
//! - `run/`: the supervisor of one run (a task, or an actor when it links
//!   actors of its own), split by the state it owns;
//!   `agent_actor` and `actor_pool`: the actors hosting participants;
//!   `protocol`: what the two kinds of actor say to each other;
//! - `snapshot` and `answer`: loading a checkpoint and checking it against
//!   this workflow before a run resumes from it, and answering a pending
//!   question (the checkpoint format itself is `crate::checkpoint`'s, the
//!   scheduler state and what else a run carries across a checkpoint
//!   `crate::resumable`'s);
//!   `summary`: a run as a store describes it, for listing runs;
//!   `fallback`: where a resume carries on from in a damaged store;
//!   `retention`: what a store keeps, and pruning the rest;
//!   `progress`: how a nested run reports its state to the run above it.

mod actor_pool;
mod agent_actor;
mod agent_gate;
mod answer;
mod api;
mod builder;
mod child_paths;
mod fallback;
mod fork;
mod history;
#[cfg(test)]
mod hot_path_sizes;
mod protocol;
mod result;
mod retention;
mod run;
mod snapshot;
mod spec;
mod summary;

pub use crate::progress::ProgressRelay;
pub use api::Workflow;
pub use builder::WorkflowBuilder;
pub use fork::ForkEdits;
pub use history::{CheckpointSummary, summarize_checkpoints};
pub use result::{RunResult, RunStream};
pub use retention::{Pruned, Retention, prune};
pub use summary::{RunSummary, summarize_run, summarize_runs};
