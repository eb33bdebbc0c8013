//! Requests forwarded to the worker holding a run, answered as if they
//! had been sent to it: an answer to a run's question (`POST
//! /runs/{id}/input`, an A2A follow-up message, an AG-UI resume) and a
//! double text's `rollback` sent through another worker.
//!
//! The worker a client asked writes the request (`RunBoard::ask`, a row
//! in `troupe_serve_asks` and a `NOTIFY`) and waits at most [`WAIT`] for
//! its reply; the worker holding the run takes it (one worker does),
//! carries it out through the path a request to it takes, waits until
//! the run's new status is recorded and replies: the status and JSON it would have
//! answered, or its error. A request no worker took within the bound is
//! withdrawn (nothing was done: the client may send it again); one taken
//! and not replied to is reported as such.
//!
//! When the run's worker died with the run waiting for input, nobody
//! holds it: the worker asked takes it over (its lease is free) and
//! answers it from its last checkpoint (`orphan.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use troupe::store::{Ask, AskState, LeaseHolder, Notice};

use super::super::error::ApiError;
use super::super::run::{Run, Status};
use super::super::run_control;
use super::super::say;
use super::super::state::Shared;
use super::super::texting;
use super::{Board, board_of, find, unreachable};

/// How long a forwarded request waits for its reply.
pub(crate) const WAIT: Duration = Duration::from_secs(10);
/// How often the reply is looked for without a wake-up.
const POLL: Duration = Duration::from_millis(250);

/// Answers an open request of run `id` (the oldest when none is named)
/// wherever it runs: here at once, on another worker through it, or —
/// its worker dead — taken over here. The run (a mirror for another
/// worker's), and the position in its events the answer's start at.
pub(crate) async fn answer(
    state: &Shared,
    id: &str,
    request_id: Option<&str>,
    text: String,
) -> Result<(Arc<Run>, usize), ApiError> {
    if let Ok(run) = state.runs.get(id) {
        let from = run.inner().events.len();
        run_control::answer(state, &run, request_id, text)?;
        return Ok((run, from));
    }
    let run = find(state, id).await?;
    let board =
        board_of(state, &run.team).ok_or_else(|| ApiError::not_found(format!("no run `{id}`")))?;
    let record = board
        .shared
        .run(id)
        .await
        .map_err(unreachable)?
        .ok_or_else(|| ApiError::not_found(format!("no run `{id}`")))?;
    if record.status != Status::WaitingForInput.as_str() {
        return Err(ApiError::conflict(format!(
            "run `{id}` is {}, not waiting for input",
            record.status
        )));
    }
    if !record.alive || dead_here(&record.worker) {
        return super::orphan::answer(state, &board, record, request_id, text).await;
    }
    let from = run.inner().events.len();
    ask(
        &board,
        id,
        "answer",
        json!({"request_id": request_id, "answer": text}),
    )
    .await?;
    // The worker holding it recorded it running (or over) before it
    // replied: the mirror reads that at its next look, woken by that
    // write. Once it did, a reader waiting for the answer's end waits
    // for it.
    let mut changes = run.watch();
    let moved = tokio::time::timeout(WAIT / 2, async {
        loop {
            changes.borrow_and_update();
            if run.inner().status() != Status::WaitingForInput || changes.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    if moved.is_err() {
        let mut inner = run.inner();
        inner.status = Some(Status::Running);
        inner.requests.clear();
        drop(inner);
        run.bump();
    }
    Ok((run, from))
}

/// The newest run of `team`'s session `session` waiting for input on
/// another worker, followed here (AG-UI's `resume[]` answers it).
pub(crate) async fn waiting_elsewhere(
    state: &Shared,
    team: &str,
    session: &str,
) -> Result<Option<Arc<Run>>, ApiError> {
    let Some(board) = board_of(state, team) else {
        return Ok(None);
    };
    let records = board
        .shared
        .runs(super::LISTED)
        .await
        .map_err(unreachable)?;
    let waiting = records.into_iter().find(|r| {
        r.team == team
            && r.session.as_deref() == Some(session)
            && r.status == Status::WaitingForInput.as_str()
            && state.runs.get(&r.id).is_err()
    });
    match waiting {
        Some(r) => super::mirror::follow(&board, r).await.map(Some),
        None => Ok(None),
    }
}

/// Waits (at most half of [`WAIT`]) until run `id`'s record on the board
/// has a status for which `done` holds. The run's publisher writes it:
/// writing it here as well could land after a newer write of the
/// publisher's and put an old status back.
async fn recorded(board: &Board, id: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT / 2;
    while Instant::now() < deadline {
        if let Ok(Some(r)) = board.shared.run(id).await
            && done(&r.status)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `worker` (`host:pid:…`, `PostgresBoard`'s ids) was a process
/// of this host that has ended: dead before its heartbeat goes stale.
fn dead_here(worker: &str) -> bool {
    let mut parts = worker.rsplitn(3, ':');
    let (_, pid, host) = (parts.next(), parts.next(), parts.next());
    match (pid.and_then(|p| p.parse().ok()), host) {
        (Some(pid), Some(host)) => LeaseHolder {
            pid,
            host: host.to_string(),
            since: std::time::SystemTime::now(),
        }
        .is_dead_here(),
        _ => false,
    }
}

/// Asks the worker holding run `run_id` to roll it back (cancel it and
/// put its session back as it was before it); returns once it did.
pub(crate) async fn rollback(board: &Board, run_id: &str) -> Result<(), ApiError> {
    ask(board, run_id, "rollback", Value::Null)
        .await
        .map(|_| ())
}

/// Sends request `kind` on `run_id` and waits for its reply (at most
/// [`WAIT`]): what the worker holding the run answered.
async fn ask(board: &Board, run_id: &str, kind: &str, payload: Value) -> Result<Value, ApiError> {
    let mut notices = board.shared.notices();
    let id = board
        .shared
        .ask(run_id, kind, &payload)
        .await
        .map_err(unreachable)?;
    let deadline = Instant::now() + WAIT;
    loop {
        match board.shared.ask_state(id).await.map_err(unreachable)? {
            AskState::Replied(reply) => return replied(reply),
            AskState::Gone => {
                return Err(timeout(format!(
                    "the {kind} for run `{run_id}` was withdrawn before its worker took it"
                )));
            }
            AskState::Waiting | AskState::Taken => {}
        }
        if Instant::now() >= deadline {
            let withdrawn = board.shared.withdraw(id).await.unwrap_or(false);
            let secs = WAIT.as_secs();
            return Err(timeout(if withdrawn {
                format!(
                    "the worker running run `{run_id}` did not take the {kind} within {secs} s; nothing was done: send it again"
                )
            } else {
                format!(
                    "the worker running run `{run_id}` took the {kind} but did not reply within {secs} s; see GET /runs/{run_id} for whether it was applied"
                )
            }));
        }
        let _ = tokio::time::timeout(POLL, async {
            loop {
                match notices.recv().await {
                    Ok(Notice::Run(r)) if r == run_id => return,
                    Ok(Notice::Resync) | Err(RecvError::Lagged(_)) => return,
                    Ok(_) => {}
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        })
        .await;
    }
}

/// 504 with `message`.
fn timeout(message: String) -> ApiError {
    ApiError::new(StatusCode::GATEWAY_TIMEOUT, message)
}

/// A reply as written by [`carry_out`]: its value, or the error it names.
fn replied(reply: Value) -> Result<Value, ApiError> {
    if let Some(error) = reply.get("error").and_then(Value::as_str) {
        let status = reply
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(ApiError::new(status, error.to_string()));
    }
    Ok(reply.get("ok").cloned().unwrap_or(Value::Null))
}

/// Takes the requests on this worker's runs `runs` and carries each out
/// in the background (`controls.rs` calls it at each wake-up).
pub(super) async fn take(state: &Shared, board: &Arc<Board>, runs: &[Arc<Run>]) {
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let asks = match board.shared.take_asks(&ids).await {
        Ok(a) => a,
        Err(e) => {
            say(&format!(
                "troupe serve: cannot read the other workers' requests: {e}"
            ));
            return;
        }
    };
    for ask in asks {
        let Some(run) = runs.iter().find(|r| r.id == ask.run_id).cloned() else {
            continue;
        };
        let (state, board) = (state.clone(), board.clone());
        tokio::spawn(async move {
            let reply = match carry_out(&state, &board, &run, &ask).await {
                Ok(v) => json!({"ok": v}),
                Err(e) => json!({"status": e.status.as_u16(), "error": e.message}),
            };
            if let Err(e) = board.shared.reply(ask.id, &run.id, &reply).await {
                say(&format!(
                    "troupe serve: run `{}`: cannot reply to another worker's {}: {e}",
                    run.id, ask.kind
                ));
            }
        });
    }
}

/// Carries out `ask` on `run` (of this worker) as if it had been sent
/// here; what this worker's path answers.
async fn carry_out(
    state: &Shared,
    board: &Board,
    run: &Arc<Run>,
    ask: &Ask,
) -> Result<Value, ApiError> {
    match ask.kind.as_str() {
        "answer" => {
            let request = ask.payload.get("request_id").and_then(Value::as_str);
            let text = ask
                .payload
                .get("answer")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            run_control::answer(state, run, request, text)?;
            // Recorded (by the run's publisher) before the reply: the
            // asker never reads it waiting still.
            recorded(board, &run.id, |s| s != Status::WaitingForInput.as_str()).await;
            Ok(json!({"id": run.id, "status": "running"}))
        }
        "rollback" => {
            texting::roll_back(state, run)
                .await
                .map_err(ApiError::internal)?;
            let status = run.inner().status().as_str();
            recorded(board, &run.id, |s| s == status).await;
            Ok(json!({"id": run.id, "status": status}))
        }
        other => Err(ApiError::bad_request(format!(
            "unknown request `{other}` from another worker"
        ))),
    }
}
