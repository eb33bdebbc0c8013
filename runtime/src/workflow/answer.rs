//! Answering a question an agent asked the caller: the answer joins the
//! conversation and the asking agent's inbox, and the request leaves the
//! scheduler's state.

use std::sync::Arc;

use super::request::InputRequest;
use super::spec::Spec;
use crate::error::CheckpointError;
use crate::graph::cursor::Cursor;
use crate::message::Message;
use crate::thread::Thread;

/// The input requests pending in a thread.
pub(crate) fn pending_requests(thread: &Thread) -> Vec<InputRequest> {
    thread
        .state()
        .map(|s| s.scheduler.requests().to_vec())
        .unwrap_or_default()
}

/// Delivers the caller's answer to request `request_id`: it joins the
/// conversation and the asking agent's inbox, and (in a graph) the agent
/// runs next.
pub(crate) fn deliver(
    spec: &Spec,
    thread: &mut Thread,
    run_id: &str,
    request_id: &str,
    answer: String,
) -> Result<(), CheckpointError> {
    let requests = thread.state().map_or(&[][..], |s| s.scheduler.requests());
    let Some(pos) = requests.iter().position(|r| r.id == request_id) else {
        return Err(CheckpointError::UnknownRequest {
            run_id: run_id.to_string(),
            request: request_id.to_string(),
            pending: if requests.is_empty() {
                "none".into()
            } else {
                requests
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    };
    let message = Arc::new(Message::user(answer).with_metadata("troupe.request", request_id));
    thread.push_shared(message.clone());
    let len = thread.len();
    let state = thread.state_mut().get_or_insert_with(Default::default);
    let scheduler = state.scheduler.body_mut();
    let request = scheduler.requests.remove(pos);
    state.consumed = len;
    state
        .pending
        .entry(request.agent.clone())
        .or_default()
        .push(message);
    if let (Some(graph), Some(node)) = (&spec.graph, spec.router.index_of(&request.agent)) {
        let cursor = scheduler.graph.get_or_insert_with(|| Cursor::new(graph));
        // A cursor of another graph (the thread came from another
        // workflow) does not carry on here: the graph starts from the
        // asking node.
        if !cursor.fits(graph) {
            *cursor = Cursor::new(graph);
        }
        cursor.activate(node);
    }
    Ok(())
}
