//! [`RunSummary`]: what a store knows of a run — when it started, its last
//! checkpoint, where it stands — read without the workflow that made it
//! (for listing runs, as `troupe runs` does).

use std::time::SystemTime;

use super::answer;
use super::snapshot;
use crate::checkpoint::codec;
use crate::resumable::request::InputRequest;
use crate::resumable::status::RunStatus;
use crate::store::{CheckpointId, CheckpointStore, StoreError};

/// One run as its checkpoints in a store describe it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_runtime::store::MemoryStore;
/// use troupe_runtime::{FnAgent, RunContext, RunStatus, Thread, Workflow, history::summarize_runs};
///
/// let store = Arc::new(MemoryStore::new());
/// let echo = Workflow::builder()
///     .name("echo")
///     .participant(FnAgent::sync("echo", |_: &Thread| Ok("hi")))
///     .checkpoint_store(store.clone())
///     .build()?;
/// echo.run_task("go", &RunContext::new().with_run_id("r1")).await?;
/// let runs = summarize_runs(store.as_ref()).await?;
/// assert_eq!(runs[0].run_id, "r1");
/// assert_eq!(runs[0].status, Some(RunStatus::Completed));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// When the run first started (the first checkpoint's time when the
    /// latest one cannot be read).
    pub started: SystemTime,
    /// When its latest checkpoint was saved.
    pub last_checkpoint: SystemTime,
    /// Its latest checkpoint.
    pub checkpoint: CheckpointId,
    /// How many checkpoints the store keeps of it.
    pub checkpoints: usize,
    /// The superstep after which the latest checkpoint was taken.
    pub superstep: u64,
    /// The status the run ended with; `None` when its latest checkpoint was
    /// taken while it was under way (it is running, or its process died).
    pub status: Option<RunStatus>,
    /// The questions waiting for an answer.
    pub requests: Vec<InputRequest>,
    /// What the run spent up to its latest checkpoint (`None` when it
    /// cannot be read).
    pub stats: Option<crate::stats::RunStats>,
    /// Why the latest checkpoint could not be read (another format version,
    /// damage), if it could not: the other fields are then from its
    /// metadata alone. Also set when the store reports damage hiding
    /// later checkpoints ([`CheckpointStore::damage`]): the other fields
    /// are then of the newest checkpoint before it (with none, of the
    /// epoch and checkpoint 0).
    pub unreadable: Option<String>,
    /// What the run failed with, when it failed mid-way and its store
    /// kept the failure ([`CheckpointStore::failure`]): its latest
    /// checkpoint, taken while it was under way, no longer means it is.
    pub failed: Option<String>,
}

/// Summarises run `run_id` from its checkpoints in `store`; `None` when
/// the store has none of it. A latest checkpoint that cannot be read is
/// summarised from its metadata, with [`RunSummary::unreadable`] saying
/// why.
pub async fn summarize_run(
    store: &dyn CheckpointStore,
    run_id: &str,
) -> Result<Option<RunSummary>, StoreError> {
    let metas = store.list(run_id).await?;
    // Damage hiding later checkpoints makes the run unreadable, whatever
    // the checkpoints before it say.
    let damage = store.damage(run_id).await?;
    let (Some(first), Some(last)) = (metas.first(), metas.last()) else {
        return Ok(damage.map(|reason| RunSummary {
            run_id: run_id.to_string(),
            started: SystemTime::UNIX_EPOCH,
            last_checkpoint: SystemTime::UNIX_EPOCH,
            checkpoint: CheckpointId(0),
            checkpoints: 0,
            superstep: 0,
            status: None,
            requests: Vec::new(),
            stats: None,
            unreadable: Some(reason),
            failed: None,
        }));
    };
    let mut summary = RunSummary {
        run_id: run_id.to_string(),
        started: first.created_at,
        last_checkpoint: last.created_at,
        checkpoint: last.id,
        checkpoints: metas.len(),
        superstep: last.superstep,
        status: None,
        requests: Vec::new(),
        stats: None,
        unreadable: None,
        failed: None,
    };
    let readable = snapshot::OLDEST_READABLE_FORMAT..=codec::FORMAT_VERSION;
    let snapshot = if !readable.contains(&last.format_version) {
        Err(format!(
            "format version {}, this build reads versions {} to {}",
            last.format_version,
            readable.start(),
            readable.end()
        ))
    } else {
        match crate::store::load_whole(store, run_id, Some(last.id)).await {
            Ok(Some(cp)) => snapshot::decode(&cp),
            Ok(None) => Err("deleted while being read".to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    match snapshot {
        Ok(s) => {
            summary.started = s.started_at;
            summary.requests = answer::pending_requests(&s.thread);
            summary.status = s.status;
            summary.stats = Some(s.stats);
        }
        Err(reason) => summary.unreadable = Some(reason),
    }
    if let Some(reason) = damage {
        summary.unreadable = Some(reason);
    }
    if summary.status.is_none() && summary.requests.is_empty() {
        summary.failed = store.failure(run_id).await?.map(|f| f.error);
    }
    Ok(Some(summary))
}

/// Summarises every run in `store`, newest first (by start, then by id).
pub async fn summarize_runs(store: &dyn CheckpointStore) -> Result<Vec<RunSummary>, StoreError> {
    let mut out = Vec::new();
    for run_id in store.runs().await? {
        if let Some(s) = summarize_run(store, &run_id).await? {
            out.push(s);
        }
    }
    out.sort_by(|a, b| {
        b.started
            .cmp(&a.started)
            .then_with(|| b.run_id.cmp(&a.run_id))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Checkpoint, MemoryStore};
    use crate::{FnAgent, RunContext, Thread, Workflow};
    use std::sync::Arc;

    fn echo(store: Arc<MemoryStore>) -> Workflow {
        Workflow::builder()
            .name("echo")
            .participant(FnAgent::sync("echo", |_: &Thread| Ok("hi")))
            .checkpoint_store(store)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn runs_are_listed_newest_first_with_their_status() {
        let store = Arc::new(MemoryStore::new());
        let wf = echo(store.clone());
        wf.run_task("go", &RunContext::new().with_run_id("older"))
            .await
            .unwrap();
        wf.run_task("go", &RunContext::new().with_run_id("newer"))
            .await
            .unwrap();
        let runs = summarize_runs(store.as_ref()).await.unwrap();
        let ids: Vec<_> = runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["newer", "older"]);
        assert!(runs.iter().all(|r| r.status == Some(RunStatus::Completed)));
        assert!(runs.iter().all(|r| r.unreadable.is_none()));
        assert!(runs[0].started <= runs[0].last_checkpoint);
        assert!(
            summarize_run(store.as_ref(), "nope")
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_checkpoint_of_another_format_is_listed_as_unreadable() {
        let store = MemoryStore::new();
        let mut cp = Checkpoint::new("old", None, 4, 1, vec![1, 2, 3]);
        cp.format_version = 2;
        store.save(&cp).await.unwrap();
        let s = summarize_run(&store, "old").await.unwrap().unwrap();
        assert_eq!(s.superstep, 4);
        assert_eq!(s.status, None);
        let reason = s.unreadable.unwrap();
        assert!(reason.contains("format version 2"), "{reason}");
        // Damaged bytes of the current format: unreadable too, not an error.
        let cp = Checkpoint::new("bad", None, 1, 1, vec![0xff; 5]);
        store.save(&cp).await.unwrap();
        let s = summarize_run(&store, "bad").await.unwrap().unwrap();
        assert!(s.unreadable.is_some());
    }
}
