//! [`CheckpointSummary`]: each checkpoint a store keeps of a run — when,
//! after which superstep, who spoke last, what it waits on — read without
//! the workflow that made it (for `troupe runs show`, and to pick a
//! checkpoint to fork from).

use std::time::SystemTime;

use super::answer;
use super::snapshot;
use crate::codec;
use crate::resumable::request::InputRequest;
use crate::resumable::status::RunStatus;
use crate::store::{CheckpointId, CheckpointStore, StoreError, load_whole};

/// One checkpoint of a run, as its contents describe it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_runtime::store::MemoryStore;
/// use troupe_runtime::{FnAgent, RunContext, Thread, Workflow, history::summarize_checkpoints};
///
/// let store = Arc::new(MemoryStore::new());
/// let echo = Workflow::builder()
///     .name("echo")
///     .participant(FnAgent::sync("echo", |_: &Thread| Ok("hi")))
///     .checkpoint_store(store.clone())
///     .build()?;
/// echo.run_task("go", &RunContext::new().with_run_id("r1")).await?;
/// let cps = summarize_checkpoints(store.as_ref(), "r1").await?;
/// assert_eq!(cps.last().and_then(|c| c.last_speaker.as_deref()), Some("echo"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointSummary {
    /// The checkpoint's id.
    pub id: CheckpointId,
    /// The superstep after which it was taken.
    pub superstep: u64,
    /// When it was saved.
    pub created_at: SystemTime,
    /// Who produced the run's last message then (an agent, or `user`).
    pub last_speaker: Option<String>,
    /// That message's text.
    pub last_message: Option<String>,
    /// The questions the run waited on then.
    pub requests: Vec<InputRequest>,
    /// The status the run had ended with, if it had.
    pub status: Option<RunStatus>,
    /// Why the checkpoint could not be read, if it could not (the other
    /// fields are then from its metadata alone).
    pub unreadable: Option<String>,
}

/// Every checkpoint the store keeps of run `run_id`, oldest first; empty
/// for a run it does not know.
pub async fn summarize_checkpoints(
    store: &dyn CheckpointStore,
    run_id: &str,
) -> Result<Vec<CheckpointSummary>, StoreError> {
    let readable = snapshot::OLDEST_READABLE_FORMAT..=codec::FORMAT_VERSION;
    let mut out = Vec::new();
    for meta in store.list(run_id).await? {
        let mut summary = CheckpointSummary {
            id: meta.id,
            superstep: meta.superstep,
            created_at: meta.created_at,
            last_speaker: None,
            last_message: None,
            requests: Vec::new(),
            status: None,
            unreadable: None,
        };
        let decoded = if !readable.contains(&meta.format_version) {
            Err(format!("format version {}", meta.format_version))
        } else {
            match load_whole(store, run_id, Some(meta.id)).await {
                Ok(Some(cp)) => snapshot::decode(&cp),
                Ok(None) => Err("deleted while being read".to_string()),
                Err(e) => Err(e.to_string()),
            }
        };
        match decoded {
            Ok(s) => {
                let last = s.thread.last();
                summary.last_speaker = s
                    .thread
                    .state()
                    .and_then(|st| st.last_speaker.clone())
                    .or_else(|| last.map(|m| m.source.to_string()));
                summary.last_message = last.map(|m| m.text_content().into_owned());
                summary.requests = answer::pending_requests(&s.thread);
                summary.status = s.status;
            }
            Err(reason) => summary.unreadable = Some(reason),
        }
        out.push(summary);
    }
    Ok(out)
}
