//! [`Retention`]: what a store keeps — finished runs up to an age, the
//! last K checkpoints of each run, conversations up to an idle time — and
//! [`prune`], which deletes the rest and gives the space back.

use std::time::{Duration, SystemTime};

use crate::store::{CheckpointStore, StoreError, ThreadStore};

use super::result::RunStatus;
use super::summary::summarize_runs;

/// What a store keeps; `None` keeps everything of that kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retention {
    /// Finished runs (completed, stopped or cancelled) whose last
    /// checkpoint is older than this are deleted, every checkpoint of them.
    /// Runs under way, waiting for input or interrupted are kept.
    pub runs: Option<Duration>,
    /// Each run keeps its newest this many checkpoints.
    pub checkpoints: Option<usize>,
    /// Conversations whose last message is older than this are deleted.
    pub sessions: Option<Duration>,
}

impl Retention {
    /// Whether it keeps everything.
    pub fn keeps_all(&self) -> bool {
        self.runs.is_none() && self.checkpoints.is_none() && self.sessions.is_none()
    }
}

/// What [`prune`] deleted (or, on a dry run, would delete).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// The finished runs deleted whole.
    pub runs: Vec<String>,
    /// Checkpoints deleted from the runs kept (beyond the last K).
    pub checkpoints: usize,
    /// The conversations deleted.
    pub sessions: Vec<String>,
}

impl Pruned {
    /// Whether nothing was (or would be) deleted.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.checkpoints == 0 && self.sessions.is_empty()
    }
}

/// Applies `keep` to the stores as of `now`; with `dry_run`, only says
/// what it would delete. After deleting, the stores give the space back
/// ([`CheckpointStore::compact`]).
pub async fn prune(
    checkpoints: &dyn CheckpointStore,
    threads: &dyn ThreadStore,
    keep: &Retention,
    now: SystemTime,
    dry_run: bool,
) -> Result<Pruned, StoreError> {
    let mut out = Pruned::default();
    let old = |age: Duration, t: SystemTime| now.duration_since(t).is_ok_and(|d| d > age);
    if keep.runs.is_some() || keep.checkpoints.is_some() {
        for run in summarize_runs(checkpoints).await? {
            let finished = run.requests.is_empty()
                && run.unreadable.is_none()
                && matches!(
                    run.status,
                    Some(RunStatus::Completed | RunStatus::Stopped(_) | RunStatus::Cancelled)
                );
            if finished && keep.runs.is_some_and(|age| old(age, run.last_checkpoint)) {
                if !dry_run {
                    checkpoints.prune(&run.run_id, 0).await?;
                }
                out.runs.push(run.run_id);
            } else if let Some(k) = keep.checkpoints
                && run.checkpoints > k
            {
                out.checkpoints += if dry_run {
                    run.checkpoints - k
                } else {
                    checkpoints.prune(&run.run_id, k).await?
                };
            }
        }
    }
    if let Some(age) = keep.sessions {
        for id in threads.conversations().await? {
            let Some(thread) = threads.load_thread(&id).await? else {
                continue;
            };
            let last = thread.messages().last().map(|m| m.created_at);
            if last.is_none_or(|t| old(age, t)) {
                if !dry_run {
                    threads.delete_thread(&id).await?;
                }
                out.sessions.push(id);
            }
        }
    }
    if !dry_run && !out.is_empty() {
        checkpoints.compact().await?;
    }
    Ok(out)
}
