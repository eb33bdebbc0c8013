//! What a checkpoint holds of a run, and the checks made before a run
//! resumes from one.

use super::spec::Spec;
use crate::checkpoint::codec;
use crate::checkpoint::delta::{ChainPayload, Folded};
use crate::checkpoint::record::{Checkpoint, CheckpointId, FIRST_CHAINED_VERSION, legacy_checksum};
use crate::checkpoint::snapshot_restore::restore;
pub(crate) use crate::checkpoint::snapshot_value::Snapshot;
use crate::error::CheckpointError;
use crate::resumable::scheduler_state::{SchedulerState, SchedulerStateError};
use crate::store::{CheckpointStore, StoreError};

/// Where a resumed run picks up.
pub(crate) struct Resumed {
    /// The state to carry on from.
    pub(crate) snapshot: Snapshot,
    /// The checkpoint it came from.
    pub(crate) parent: CheckpointId,
    /// The id the resumed run saves its checkpoints under.
    pub(crate) run_id: String,
}

/// A hash of everything that gives a workflow its shape: names, thread
/// slots, routes and inbox options, the graph. Two builds of the same
/// description hash alike; a checkpoint of another shape is refused.
pub(crate) fn topology_hash(spec_text: &str) -> u64 {
    legacy_checksum(spec_text.as_bytes())
}

/// Loads a checkpoint (the latest when `id` is `None`) and checks it
/// against this workflow before anything of it is used: its format
/// version, its checksum, its topology, and that its scheduler state fits
/// (a state that does not is an error naming the checkpoint, never a
/// fresh start).
pub(crate) async fn load(
    spec: &Spec,
    store: &dyn CheckpointStore,
    run_id: &str,
    id: Option<CheckpointId>,
) -> Result<(Checkpoint, Snapshot), CheckpointError> {
    let found = match id {
        Some(id) => store.load(run_id, &id).await?,
        None => store.latest(run_id).await?,
    };
    let checkpoint = found.ok_or_else(|| CheckpointError::NotFound {
        run_id: run_id.to_string(),
        id: id.map_or_else(|| "at all".to_string(), |i| i.to_string()),
    })?;
    let target_id = checkpoint.id;
    let name = || target_id.to_string();
    if !(OLDEST_READABLE_FORMAT..=codec::FORMAT_VERSION).contains(&checkpoint.format_version) {
        return Err(CheckpointError::UnknownVersion {
            run_id: run_id.to_string(),
            id: name(),
            expected: codec::FORMAT_VERSION,
            found: checkpoint.format_version,
        });
    }
    if let Err(e) = checkpoint.verify() {
        return Err(CheckpointError::Corrupt {
            run_id: run_id.to_string(),
            id: name(),
            reason: e.to_string(),
        });
    }
    // A delta comes with its chain, folded (read from the fold as it is,
    // not encoded into one payload to be decoded again).
    let folded = crate::store::fold_chain(store, &checkpoint)
        .await
        .map_err(|e| match e {
            StoreError::Corrupt { what, reason } => CheckpointError::Corrupt {
                run_id: run_id.to_string(),
                id: name(),
                reason: format!("{what}: {reason}"),
            },
            other => other.into(),
        })?;
    if checkpoint.topology_hash != spec.topology_hash {
        return Err(CheckpointError::OtherTopology {
            run_id: run_id.to_string(),
            id: name(),
            expected: spec.topology_hash,
            found: checkpoint.topology_hash,
        });
    }
    let snapshot = match &folded {
        Some(folded) => restore(folded, checkpoint.format_version),
        None => decode(&checkpoint),
    };
    let snapshot = snapshot.map_err(|reason| CheckpointError::Corrupt {
        run_id: run_id.to_string(),
        id: name(),
        reason,
    })?;
    if let Some(state) = snapshot.thread.state() {
        check_scheduler(&state.scheduler, spec).map_err(|source| {
            CheckpointError::SchedulerState {
                run_id: run_id.to_string(),
                id: name(),
                source,
            }
        })?;
    }
    Ok((checkpoint, snapshot))
}

/// The oldest checkpoint format this build reads: format 4 (a whole
/// [`Snapshot`], FNV-checksummed) decodes as it was written.
pub(crate) const OLDEST_READABLE_FORMAT: u32 = 4;

/// The snapshot a whole checkpoint holds, by its format version.
pub(crate) fn decode(checkpoint: &Checkpoint) -> Result<Snapshot, String> {
    if checkpoint.format_version < FIRST_CHAINED_VERSION {
        return codec::decode(&checkpoint.payload).map_err(|e| e.to_string());
    }
    let (_, payload) = ChainPayload::decode(&checkpoint.payload, checkpoint.format_version)
        .map_err(|e| e.to_string())?;
    let mut folded = Folded::default();
    folded.apply(false, payload);
    restore(&folded, checkpoint.format_version)
}

/// Checks that workflow `spec` can carry on from scheduler state `state`:
/// its version, its graph cursor, the participants it names. A checkpoint
/// is proven to be of the same workflow (by its topology hash), so
/// anything here that does not fit is damage.
fn check_scheduler(state: &SchedulerState, spec: &Spec) -> Result<(), SchedulerStateError> {
    state.check_version()?;
    let Some(body) = state.body() else {
        return Ok(());
    };
    match (&body.graph, &spec.graph) {
        (Some(_), None) => {
            return Err(SchedulerStateError::GraphMismatch(
                "the workflow has no graph",
            ));
        }
        (Some(cursor), Some(graph)) if !cursor.fits(graph) => {
            return Err(SchedulerStateError::GraphMismatch(
                "its tables or waiting nodes do not match the graph's nodes and transitions",
            ));
        }
        _ => {}
    }
    let named = body
        .interrupted
        .iter()
        .map(|n| ("interrupted turn", n))
        .chain(body.requests.iter().map(|r| ("input request", &r.agent)))
        .chain(body.held.iter().map(|h| ("held reply", &h.node)));
    for (role, name) in named {
        if spec.router.index_of(name).is_none() {
            return Err(SchedulerStateError::UnknownParticipant {
                role,
                name: name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;
    use crate::graph::cursor::Cursor;
    use crate::resumable::scheduler_state::SchedulerBody;
    use crate::store::MemoryStore;
    use crate::workflow::Workflow;
    use crate::{FnAgent, RunContext, RunError, Thread};
    use std::sync::Arc;

    fn graph(names: &[&str]) -> Graph {
        let mut g = Graph::builder();
        for &n in names {
            let text = format!("{n} done");
            g = g.add_agent(FnAgent::sync(n, move |_: &Thread| Ok(text.clone())));
        }
        for pair in names.windows(2) {
            g = g.add_edge(pair[0], pair[1]);
        }
        g.build().unwrap()
    }

    fn chain(store: Arc<MemoryStore>) -> Workflow {
        Workflow::builder()
            .name("chain")
            .graph(graph(&["a", "b", "c"]))
            .checkpoint_store(store)
            .build()
            .unwrap()
    }

    /// Runs the chain as run `r`, then saves its last checkpoint again,
    /// with valid bytes and checksum but its scheduler state damaged by
    /// `damage`; returns the damaged checkpoint's id.
    async fn damaged(
        store: &Arc<MemoryStore>,
        damage: impl FnOnce(&mut SchedulerBody),
    ) -> CheckpointId {
        let wf = chain(store.clone());
        wf.run_task("go", &RunContext::new().with_run_id("r"))
            .await
            .unwrap();
        let latest = crate::store::load_whole(store.as_ref(), "r", None)
            .await
            .unwrap()
            .unwrap();
        let mut snapshot = decode(&latest).unwrap();
        let state = snapshot.thread.state_mut().as_mut().unwrap();
        damage(state.scheduler.body_mut());
        let counters = crate::checkpoint::snapshot_delta::Counters {
            stop: snapshot.stop.clone(),
            stats: crate::checkpoint::snapshot_refs::StatsRef::of(&snapshot.stats),
            turns: snapshot.turns,
            last: snapshot.last,
            start_len: snapshot.start_len,
            started_at: snapshot.started_at,
            status: snapshot.status.clone(),
        };
        let tree = crate::checkpoint::snapshot_delta::TreeView::of(&snapshot.thread);
        let (payload, _) = crate::checkpoint::snapshot_delta::DeltaWriter::default()
            .encode(&tree, &counters)
            .unwrap();
        let cp = Checkpoint::new(
            "r",
            Some(latest.id),
            latest.superstep,
            latest.topology_hash,
            payload,
        );
        store.save(&cp).await.unwrap();
        cp.id
    }

    /// Resumes run `r` and returns the scheduler-state error, checking that
    /// it names checkpoint `id`.
    async fn refusal(store: &Arc<MemoryStore>, id: CheckpointId) -> SchedulerStateError {
        let err = chain(store.clone())
            .resume("r", &RunContext::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(&id.to_string()), "{err}");
        match err {
            RunError::Checkpoint(CheckpointError::SchedulerState {
                run_id,
                id: named,
                source,
            }) => {
                assert_eq!(run_id, "r");
                assert_eq!(named, id.to_string());
                source
            }
            other => panic!("expected a scheduler-state refusal, got {other}"),
        }
    }

    #[tokio::test]
    async fn a_cursor_of_another_graph_is_refused_naming_the_checkpoint() {
        let store = Arc::new(MemoryStore::new());
        let other = graph(&["a", "b", "c", "d"]);
        let id = damaged(&store, |s| s.graph = Some(Cursor::new(&other))).await;
        assert!(matches!(
            refusal(&store, id).await,
            SchedulerStateError::GraphMismatch(_)
        ));
    }

    #[tokio::test]
    async fn a_scheduler_state_of_another_version_is_refused_naming_it() {
        let store = Arc::new(MemoryStore::new());
        let id = damaged(&store, |s| s.version = 99).await;
        let source = refusal(&store, id).await;
        assert_eq!(
            source,
            SchedulerStateError::UnknownVersion {
                expected: crate::resumable::scheduler_state::SCHEDULER_STATE_VERSION,
                found: 99
            }
        );
        assert!(source.to_string().contains("version 99"), "{source}");
    }

    #[tokio::test]
    async fn a_turn_of_a_stranger_is_refused() {
        let store = Arc::new(MemoryStore::new());
        let id = damaged(&store, |s| s.interrupted.push("ghost".into())).await;
        assert_eq!(
            refusal(&store, id).await,
            SchedulerStateError::UnknownParticipant {
                role: "interrupted turn",
                name: "ghost".into()
            }
        );
    }

    #[tokio::test]
    async fn a_thread_with_a_state_of_another_version_is_refused() {
        let store = Arc::new(MemoryStore::new());
        let wf = chain(store);
        let mut thread = wf.run_task("go", &RunContext::new()).await.unwrap().thread;
        if let Some(state) = thread.state_mut() {
            state.scheduler.body_mut().version = 7;
        }
        thread.push(crate::Message::user("again"));
        let err = wf.run(thread, &RunContext::new()).await.unwrap_err();
        assert!(
            matches!(
                &err,
                RunError::SchedulerState {
                    source: SchedulerStateError::UnknownVersion { found: 7, .. },
                    ..
                }
            ),
            "{err}"
        );
    }
}
