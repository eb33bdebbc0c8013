//! [`Retention`]: what a store keeps — finished runs up to an age, the
//! last K checkpoints of each run, conversations up to an idle time — and
//! [`prune`], which deletes the rest and gives the space back.

use std::time::{Duration, SystemTime};

use crate::store::{CheckpointStore, StoreError, ThreadStore};

use super::summary::summarize_runs;
use crate::resumable::status::RunStatus;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Checkpoint, MemoryStore};
    use crate::{FnAgent, Message, RunContext, Thread, Workflow};
    use std::sync::Arc;

    const HOUR: Duration = Duration::from_secs(3600);

    #[tokio::test]
    async fn finished_runs_and_idle_sessions_older_than_the_age_go_a_dry_run_keeps_them() {
        let store = Arc::new(MemoryStore::new());
        let wf = Workflow::builder()
            .name("echo")
            .participant(FnAgent::sync("echo", |_: &Thread| Ok("hi")))
            .checkpoint_store(store.clone())
            .build()
            .unwrap();
        wf.run_task("go", &RunContext::new().with_run_id("done"))
            .await
            .unwrap();
        // A run whose last checkpoint was taken under way: never pruned.
        store
            .save(&Checkpoint::new("going", None, 1, 1, vec![1, 2, 3]))
            .await
            .unwrap();
        store
            .save_thread("chat", &Thread::from_messages([Message::user("hello")]))
            .await
            .unwrap();
        let keep = Retention {
            runs: Some(HOUR),
            checkpoints: None,
            sessions: Some(HOUR),
        };
        let later = SystemTime::now() + 2 * HOUR;

        let now = prune(
            store.as_ref(),
            store.as_ref(),
            &keep,
            SystemTime::now(),
            false,
        )
        .await
        .unwrap();
        assert!(now.is_empty(), "nothing is an hour old yet: {now:?}");

        let dry = prune(store.as_ref(), store.as_ref(), &keep, later, true)
            .await
            .unwrap();
        assert_eq!(dry.runs, ["done"]);
        assert_eq!(dry.sessions, ["chat"]);
        assert_eq!(store.runs().await.unwrap(), ["done", "going"]);
        assert!(store.load_thread("chat").await.unwrap().is_some());

        let real = prune(store.as_ref(), store.as_ref(), &keep, later, false)
            .await
            .unwrap();
        assert_eq!(real, dry);
        assert_eq!(store.runs().await.unwrap(), ["going"]);
        assert!(store.load_thread("chat").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn each_run_keeps_its_newest_checkpoints() {
        let store = MemoryStore::new();
        for step in 1..=5 {
            store
                .save(&Checkpoint::new("long", None, step, 1, vec![1, 2, 3]))
                .await
                .unwrap();
        }
        let keep = Retention {
            checkpoints: Some(2),
            ..Retention::default()
        };
        let dry = prune(&store, &store, &keep, SystemTime::now(), true)
            .await
            .unwrap();
        assert_eq!(dry.checkpoints, 3);
        assert_eq!(store.list("long").await.unwrap().len(), 5);
        let real = prune(&store, &store, &keep, SystemTime::now(), false)
            .await
            .unwrap();
        assert_eq!(real.checkpoints, 3);
        assert_eq!(store.list("long").await.unwrap().len(), 2);
    }
}
