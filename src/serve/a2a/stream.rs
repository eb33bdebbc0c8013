//! `SendStreamingMessage`: a run's task over SSE, each event a JSON-RPC
//! response whose result is a `StreamResponse` — the task first, then the
//! model's tokens as pieces of the `response` artifact (the answering
//! agent's, when the team names one or has one agent; the first piece of
//! each turn replaces it, the next ones append), then, when the
//! run stops running, the whole response as the artifact's last piece
//! and the final status (completed, failed, cancelled, or input required:
//! a follow-up message with the task's id answers it and streams on).

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::watch;
use troupe::Event;
use troupe::agents::a2a::types::{
    Artifact, JsonRpcResponse, Part, StreamResponse, TaskArtifactUpdateEvent,
};

use super::super::run::{Run, Status};
use super::task;

/// Where a stream stands.
struct Cursor {
    /// The JSON-RPC request's id (each event a JSON-RPC response), or
    /// `None` on the HTTP+JSON binding (each event a bare `StreamResponse`).
    id: Option<Value>,
    run: Arc<Run>,
    /// The position of the next event of the run's log to read.
    next: usize,
    changes: watch::Receiver<u64>,
    /// Whether the task was sent.
    started: bool,
    /// Whether the current agent turn has sent a piece already.
    in_turn: bool,
    /// The paths whose tokens stream (every path's when empty).
    answering: Vec<String>,
    done: bool,
}

/// The SSE response streaming `run`'s task, reading its events from
/// position `from`, for JSON-RPC request `id` (`None`: HTTP+JSON).
pub(crate) fn respond(
    id: Option<Value>,
    run: Arc<Run>,
    from: usize,
    answering: Vec<String>,
) -> Response {
    let cursor = Cursor {
        id,
        changes: run.watch(),
        run,
        next: from,
        started: false,
        in_turn: false,
        answering,
        done: false,
    };
    let events = futures::stream::unfold(cursor, |mut c| async move {
        let items = next_items(&mut c).await?;
        let frames: Vec<Result<Sse, Infallible>> = items
            .into_iter()
            .map(|item| {
                let item = serde_json::to_value(item).unwrap_or(Value::Null);
                let data = match &c.id {
                    Some(id) => serde_json::to_string(&JsonRpcResponse::result(id.clone(), item))
                        .unwrap_or_default(),
                    None => item.to_string(),
                };
                Ok(Sse::default().data(data))
            })
            .collect();
        Some((futures::stream::iter(frames), c))
    });
    axum::response::sse::Sse::new(futures::StreamExt::flatten(events))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The next items of the stream, waiting for them; `None` once the final
/// status was sent.
async fn next_items(c: &mut Cursor) -> Option<Vec<StreamResponse>> {
    if c.done {
        return None;
    }
    if !c.started {
        c.started = true;
        return Some(vec![StreamResponse {
            task: Some(task::task(&c.run, None)),
            ..StreamResponse::default()
        }]);
    }
    loop {
        c.changes.borrow_and_update();
        let (logged, status) = {
            let inner = c.run.inner();
            (inner.events.get(c.next), inner.status())
        };
        if let Some(logged) = logged {
            c.next += 1;
            // The kinds taken below.
            let Some(event) = logged.event_of(&["agent_started", "text_delta"]) else {
                continue;
            };
            let answers = c.answering.is_empty() || c.answering.iter().any(|a| a == event.path());
            match event {
                Event::AgentStarted { .. } if answers => c.in_turn = false,
                Event::TextDelta { text, .. } if !text.is_empty() && answers => {
                    let append = c.in_turn;
                    c.in_turn = true;
                    return Some(vec![piece(
                        &c.run,
                        Artifact {
                            parts: vec![Part::text(text)],
                            ..task::response_artifact(String::new())
                        },
                        append,
                        false,
                    )]);
                }
                _ => {}
            }
            continue;
        }
        if status != Status::Running {
            c.done = true;
            let mut items = Vec::new();
            if let Some(whole) = task::response(&c.run) {
                items.push(piece(&c.run, whole, false, true));
            }
            items.push(StreamResponse {
                status_update: Some(task::status_update(&c.run)),
                ..StreamResponse::default()
            });
            return Some(items);
        }
        if c.changes.changed().await.is_err() {
            return None;
        }
    }
}

/// A piece of the run's response artifact.
fn piece(run: &Run, artifact: Artifact, append: bool, last_chunk: bool) -> StreamResponse {
    StreamResponse {
        artifact_update: Some(TaskArtifactUpdateEvent {
            task_id: run.id.clone(),
            context_id: task::context(run),
            artifact,
            append,
            last_chunk,
            metadata: None,
        }),
        ..StreamResponse::default()
    }
}
