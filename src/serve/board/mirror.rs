//! Mirrors: runs of another worker followed here. A mirror is a [`Run`]
//! that never runs: its events and status come from the board — all of
//! them when it is made, then whatever is new at each wake-up naming it
//! (or every [`POLL`], should a wake-up be missed) — so the code that
//! streams a run of this worker (SSE, A2A, AG-UI) streams it the same
//! way. The record is read before the events: a record seen over comes
//! with every event written before it. A mirror is dropped a while after
//! its run is over.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use troupe::InputRequest;
use troupe::store::{BoardRun, Notice};

use super::super::error::ApiError;
use super::super::run::{Run, Status};
use super::Board;

/// How often a mirror looks without a wake-up.
const POLL: Duration = Duration::from_secs(2);
/// How long a mirror of a run over stays (for a client reading it again).
const KEEP: Duration = Duration::from_secs(60);
/// Events read at once.
const PAGE: u32 = 5000;

/// The mirror of `record`'s run (made, loaded and followed if it is not
/// followed yet).
pub(super) async fn follow(board: &Arc<Board>, record: BoardRun) -> Result<Arc<Run>, ApiError> {
    if let Some(run) = board.mirrors().get(&record.id) {
        return Ok(run.clone());
    }
    let run = Run::new(
        record.id.clone(),
        record.team.clone(),
        text(&record.detail, "task"),
        record.session.clone(),
    );
    // Wake-ups from before the first load are not needed: it reads all.
    let notices = board.shared.notices();
    let over = refresh(board, &run, Some(record))
        .await
        .map_err(|e| ApiError::internal(format!("cannot follow run: {e}")))?;
    let run = {
        let mut mirrors = board.mirrors();
        match mirrors.get(&run.id) {
            Some(other) => return Ok(other.clone()),
            None => {
                mirrors.insert(run.id.clone(), run.clone());
                run
            }
        }
    };
    let (board, mirror) = (board.clone(), run.clone());
    tokio::spawn(async move {
        if !over {
            keep_up(&board, &mirror, notices).await;
        }
        tokio::time::sleep(KEEP).await;
        board.mirrors().remove(&mirror.id);
    });
    Ok(run)
}

/// Follows `run` until it is over.
async fn keep_up(board: &Board, run: &Run, mut notices: tokio::sync::broadcast::Receiver<Notice>) {
    loop {
        let woken = tokio::time::timeout(POLL, async {
            loop {
                match notices.recv().await {
                    Ok(Notice::Run(id)) if id == run.id => return,
                    Ok(Notice::Resync) | Err(RecvError::Lagged(_)) => return,
                    Ok(_) => {}
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        });
        let _ = woken.await;
        match refresh(board, run, None).await {
            Ok(true) => return,
            Ok(false) => {}
            // The database is away: look again at the next wake-up or poll.
            Err(_) => {}
        }
    }
}

/// Brings `run` up to date (from `record`, else read); `true` once it is
/// over and every event is in.
async fn refresh(
    board: &Board,
    run: &Run,
    record: Option<BoardRun>,
) -> Result<bool, troupe::store::StoreError> {
    let record = match record {
        Some(r) => Some(r),
        None => board.shared.run(&run.id).await?,
    };
    let Some(record) = record else {
        // Pruned meanwhile: nothing more will come.
        return Ok(true);
    };
    let from = run.inner().events.len();
    let lines = load_events(board, &run.id, from).await?;
    {
        let mut inner = run.inner();
        if inner.events.len() == from {
            inner.events.extend_lines(lines);
        }
    }
    let status = take_record(run, &record);
    run.bump();
    Ok(status.ended())
}

/// A run of another worker as its record shows it, without its events
/// and not followed (A2A `ListTasks`).
pub(super) fn snapshot(record: &BoardRun) -> Arc<Run> {
    let run = Run::new(
        record.id.clone(),
        record.team.clone(),
        text(&record.detail, "task"),
        record.session.clone(),
    );
    take_record(&run, record);
    run
}

/// Sets `run`'s status, response, error and questions from `record`; the
/// status.
fn take_record(run: &Run, record: &BoardRun) -> Status {
    let status = Status::parse(&record.status).unwrap_or(Status::Running);
    {
        let mut inner = run.inner();
        inner.status = Some(status);
        inner.response = record
            .detail
            .get("response")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        inner.error = record
            .detail
            .get("error")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        inner.requests = record
            .detail
            .get("requests")
            .and_then(|v| v.as_array())
            .map(|qs| {
                qs.iter()
                    .map(|q| InputRequest {
                        id: text(q, "id"),
                        agent: text(q, "agent"),
                        prompt: text(q, "question"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        inner.remote = Some(record.detail.clone());
    }
    status
}

/// Run `run_id`'s events from position `from` on, every one (page by
/// page), as lines of `--events jsonl`.
pub(super) async fn load_events(
    board: &Board,
    run_id: &str,
    from: usize,
) -> Result<Vec<Arc<str>>, troupe::store::StoreError> {
    let mut out: Vec<Arc<str>> = Vec::new();
    loop {
        let at = from + out.len();
        let page = board
            .shared
            .events(run_id, u64::try_from(at).unwrap_or(u64::MAX), PAGE)
            .await?;
        let full = page.len() == PAGE as usize;
        for (seq, line) in page {
            // A gap (a write not committed yet): the rest comes next time.
            if usize::try_from(seq).ok() != Some(from + out.len()) {
                return Ok(out);
            }
            out.push(line.into());
        }
        if !full {
            return Ok(out);
        }
    }
}

/// The text at `key` of `v` ("" without one).
fn text(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(|x| x.as_str())
        .unwrap_or_default()
        .to_string()
}
