//! What the store holds about past runs: summaries of runs and of their
//! checkpoints, and pruning by a [`Retention`] policy (`troupe runs`,
//! `troupe checkpoints` and `troupe prune` are built on these).

pub use crate::workflow::{
    CheckpointSummary, Pruned, Retention, RunSummary, prune, summarize_checkpoints, summarize_run,
    summarize_runs,
};
