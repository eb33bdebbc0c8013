//! `GET /runs/{id}/events`: a run's events over SSE — replayed from the
//! start (or after `Last-Event-ID`), then live; `event: status` when the
//! run starts or stops waiting for input, `event: end` with the run's
//! JSON when it is over, and the stream closes.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State as Axum};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use tokio::sync::watch;

use super::error::ApiError;
use super::run::{Run, Status};
use super::state::Shared;

/// Where a stream stands.
struct Cursor {
    run: Arc<Run>,
    /// The position of the next event to send.
    next: usize,
    /// The status last told.
    told: Status,
    changes: watch::Receiver<u64>,
    done: bool,
}

/// `GET /runs/{id}/events`.
pub(crate) async fn stream(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let run = super::board::find(&state, &id).await?;
    let next = match headers.get("last-event-id") {
        None => 0,
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(|n| n + 1)
            .ok_or_else(|| {
                ApiError::bad_request("Last-Event-ID must be the id of an event (a number)".into())
            })?,
    };
    let cursor = Cursor {
        changes: run.watch(),
        run,
        next,
        told: Status::Running,
        done: false,
    };
    let events = futures::stream::unfold(cursor, |mut c| async move {
        let event = next_event(&mut c).await?;
        Some((Ok(event), c))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The next SSE event of the stream, waiting for it; `None` once the end
/// was sent.
async fn next_event(c: &mut Cursor) -> Option<Event> {
    if c.done {
        return None;
    }
    loop {
        c.changes.borrow_and_update();
        let (logged, status) = {
            let inner = c.run.inner();
            (inner.events.get(c.next), inner.status())
        };
        if let Some(line) = logged.map(|logged| logged.line()) {
            let event = Event::default().id(c.next.to_string()).data(&*line);
            c.next += 1;
            return Some(event);
        }
        if status.ended() {
            c.done = true;
            return Some(
                Event::default()
                    .event("end")
                    .data(c.run.detail().to_string()),
            );
        }
        if status != c.told {
            c.told = status;
            return Some(
                Event::default()
                    .event("status")
                    .data(c.run.detail().to_string()),
            );
        }
        if c.changes.changed().await.is_err() {
            return None;
        }
    }
}
