//! What a checkpoint holds of a run, and the checks made before a run
//! resumes from one.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::codec;
use crate::error::CheckpointError;
use crate::graph::cursor::Cursor;
use crate::message::{Message, MessageId, Usage};
use crate::stop::TrackerState;
use crate::store::{Checkpoint, CheckpointId, CheckpointStore, checksum};
use crate::thread::Thread;

use super::{InputRequest, Spec};

/// Key of the graph cursor in `WorkflowState::data`.
pub(crate) const GRAPH_STATE: &str = "graph";
/// Key of the pending input requests in `WorkflowState::data`.
pub(crate) const REQUESTS: &str = "requests";
/// Key of the participants whose turn was under way at a checkpoint.
pub(crate) const RUNNING: &str = "running";

/// A run's state between two supersteps: its thread (with every child
/// thread, inbox, the graph's frontier, joins and loop counters, pending
/// requests, all inside `WorkflowState`) and what the run itself counted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub(crate) thread: Thread,
    pub(crate) stop: Option<TrackerState>,
    pub(crate) usage: Usage,
    pub(crate) turns: u64,
    /// The final response so far.
    pub(crate) last: Option<MessageId>,
    /// How many of the thread's messages were there before this run's
    /// own output (so the result lists only what the run produced).
    pub(crate) start_len: usize,
}

/// Where a resumed run picks up.
pub(crate) struct Resumed {
    pub(crate) snapshot: Snapshot,
    pub(crate) parent: CheckpointId,
    pub(crate) run_id: String,
}

/// A hash of everything that gives a workflow its shape: names, thread
/// slots, routes and inbox options, the graph. Two builds of the same
/// description hash alike; a checkpoint of another shape is refused.
pub(crate) fn topology_hash(spec_text: &str) -> u64 {
    checksum(spec_text.as_bytes())
}

/// Loads a checkpoint (the latest when `id` is `None`) and checks it
/// against this workflow before anything of it is used.
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
    let name = || checkpoint.id.to_string();
    if checkpoint.format_version != codec::FORMAT_VERSION {
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
    if checkpoint.topology_hash != spec.topology_hash {
        return Err(CheckpointError::OtherTopology {
            run_id: run_id.to_string(),
            id: name(),
            expected: spec.topology_hash,
            found: checkpoint.topology_hash,
        });
    }
    let snapshot: Snapshot =
        codec::decode(&checkpoint.payload).map_err(|e| CheckpointError::Corrupt {
            run_id: run_id.to_string(),
            id: name(),
            reason: e.to_string(),
        })?;
    Ok((checkpoint, snapshot))
}

/// The input requests pending in a thread.
pub(crate) fn pending_requests(thread: &Thread) -> Vec<InputRequest> {
    thread
        .state()
        .and_then(|s| s.data.get(REQUESTS))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// Delivers the caller's answer to request `request_id`: it joins the
/// conversation and the asking agent's inbox, and (in a graph) the agent
/// runs next.
pub(crate) fn deliver_answer(
    spec: &Spec,
    thread: &mut Thread,
    run_id: &str,
    request_id: &str,
    answer: String,
) -> Result<(), CheckpointError> {
    let mut pending = pending_requests(thread);
    let Some(pos) = pending.iter().position(|r| r.id == request_id) else {
        return Err(CheckpointError::UnknownRequest {
            run_id: run_id.to_string(),
            request: request_id.to_string(),
            pending: if pending.is_empty() {
                "none".into()
            } else {
                pending
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    };
    let request = pending.remove(pos);
    let message = Arc::new(Message::user(answer).with_metadata("troupe.request", request_id));
    thread.push_shared(message.clone());
    let len = thread.len();
    let state = thread.state_mut().get_or_insert_with(Default::default);
    state.consumed = len;
    state
        .pending
        .entry(request.agent.clone())
        .or_default()
        .push(message);
    match serde_json::to_string(&pending) {
        Ok(text) if !pending.is_empty() => {
            state.data.insert(REQUESTS.into(), text);
        }
        _ => {
            state.data.remove(REQUESTS);
        }
    }
    if let (Some(graph), Some(node)) = (&spec.graph, spec.router.index_of(&request.agent)) {
        let mut cursor = state
            .data
            .get(GRAPH_STATE)
            .and_then(|t| serde_json::from_str::<Cursor>(t).ok())
            .filter(|c| c.fits(graph))
            .unwrap_or_else(|| Cursor::new(graph));
        cursor.activate(node);
        if let Ok(text) = serde_json::to_string(&cursor) {
            state.data.insert(GRAPH_STATE.into(), text);
        }
    }
    Ok(())
}
