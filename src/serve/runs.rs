//! The runs API: the routes that start, list, show, answer and cancel
//! runs (a run's stretch is driven by `drive.rs`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use troupe::Thread;

use super::board;
use super::body::JsonBody;
use super::drive::{Start, spawn};
use super::error::ApiError;
use super::run::{Run, Status};
use super::sessions::check_id;
use super::state::Shared;
use super::texting;
use super::webhook::{self, Webhook};

/// `POST /runs`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartBody {
    task: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    team: Option<String>,
    /// What to do if the session has a run under way (`texting.rs`).
    #[serde(default)]
    double_texting: Option<String>,
    /// Answered 202 at once; the `webhook` is told when it settles.
    #[serde(default)]
    background: bool,
    /// Where the run's completion is POSTed (`webhook.rs`).
    #[serde(default)]
    webhook: Option<Webhook>,
}

/// `POST /runs`: starts a run; 201 (202 for a `background` one).
pub(crate) async fn start(
    Axum(state): Axum<Shared>,
    JsonBody(body): JsonBody<StartBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.task.trim().is_empty() {
        return Err(ApiError::bad_request("`task` is empty".into()));
    }
    if let Some(s) = &body.session {
        check_id(s)?;
    }
    if let Some(hook) = &body.webhook {
        hook.check()?;
    }
    let policy = body
        .double_texting
        .as_deref()
        .map(texting::parse)
        .transpose()?;
    let team = state.team(body.team.as_deref())?.name.clone();
    let slot = state.limits.run_slot()?;
    let (run, turn) = board::admit(&state, &team, body.session.as_deref(), policy, || {
        let run = state.runs.create(&team, &body.task, body.session.clone());
        // Kept with the run's record on a shared database (`board/`).
        run.inner().webhook = body
            .webhook
            .as_ref()
            .and_then(|h| serde_json::to_value(h).ok());
        run.bump();
        run
    })
    .await?;
    let start = match &body.session {
        Some(_) => Start::Session(body.task),
        None => Start::Thread(Thread::from_messages([troupe::Message::user(body.task)])),
    };
    super::lease_ahead::take(&state, &run, &start).await?;
    if let Some(hook) = body.webhook {
        webhook::watch(run.clone(), hook);
    }
    texting::spawn(state.clone(), run.clone(), start, slot, turn);
    let code = match body.background {
        true => StatusCode::ACCEPTED,
        false => StatusCode::CREATED,
    };
    Ok((
        code,
        Json(json!({"id": run.id, "status": "running", "session": run.session, "team": team})),
    ))
}

/// `GET /runs`: newest first.
pub(crate) async fn list(Axum(state): Axum<Shared>) -> Result<Json<Value>, ApiError> {
    Ok(Json(Value::Array(board::list(&state).await?)))
}

/// `GET /runs/{id}`.
pub(crate) async fn status(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(board::detail(&state, &id).await?))
}

/// `POST /runs/{id}/input`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputBody {
    #[serde(default)]
    request_id: Option<String>,
    answer: String,
}

/// `POST /runs/{id}/input`: answers an open request (the oldest when none
/// is named) and runs on; 202.
pub(crate) async fn input(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<InputBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    // A run of another worker on a shared database is answered through it.
    let (run, _) = board::answer(&state, &id, body.request_id.as_deref(), body.answer).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": run.id, "status": "running"})),
    ))
}

/// Answers an open request of `run` (the oldest when none is named) and
/// runs it on in the background (the runs API and A2A follow-ups).
pub(crate) fn answer(
    state: &Shared,
    run: &Arc<Run>,
    request_id: Option<&str>,
    answer: String,
) -> Result<(), ApiError> {
    let id = &run.id;
    let slot = state.limits.run_slot()?;
    let start = {
        let mut inner = run.inner();
        if inner.status() != Status::WaitingForInput {
            return Err(ApiError::conflict(format!(
                "run `{id}` is {}, not waiting for input",
                inner.status().as_str()
            )));
        }
        let request = match request_id {
            Some(r) => inner.requests.iter().find(|q| q.id == r).ok_or_else(|| {
                ApiError::not_found(format!(
                    "run `{id}` has no open request `{r}`; open: {}",
                    inner
                        .requests
                        .iter()
                        .map(|q| q.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
            None => inner
                .requests
                .first()
                .ok_or_else(|| ApiError::conflict(format!("run `{id}` has no open request")))?,
        }
        .id
        .clone();
        let Some(thread) = inner.thread.take() else {
            return Err(ApiError::conflict(format!(
                "run `{id}` is being answered already"
            )));
        };
        inner.status = Some(Status::Running);
        inner.requests.clear();
        Start::Answer {
            request,
            answer,
            thread,
        }
    };
    run.bump();
    spawn(state.clone(), run.clone(), start, slot);
    Ok(())
}

/// `POST /runs/{id}/cancel`: cancels a run under way or waiting; 202.
pub(crate) async fn cancel(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (id, status) = board::cancel(&state, &id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "status": status})),
    ))
}

/// Cancels `run` if it is under way or waiting (the runs API and A2A's
/// `CancelTask`); its status after (still running until the cancel lands).
pub(crate) fn cancel_run(run: &Run) -> Result<Status, ApiError> {
    let id = &run.id;
    let status = {
        let mut inner = run.inner();
        match inner.status() {
            Status::Running => {}
            Status::WaitingForInput => {
                inner.status = Some(Status::Cancelled);
                inner.thread = None;
                inner.requests.clear();
            }
            ended => {
                return Err(ApiError::conflict(format!(
                    "run `{id}` is {} already",
                    ended.as_str()
                )));
            }
        }
        inner.status()
    };
    // Outside the lock: cancelling may emit events, which take it.
    if status == Status::Running {
        run.ctx.cancel();
    }
    run.bump();
    Ok(status)
}
