//! The runs API: the routes that start, list, show, answer and cancel
//! runs (a run's stretch is driven by `drive.rs`).

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use troupe::Thread;

use super::board;
use super::body::JsonBody;
use super::drive::Start;
use super::error::ApiError;
use super::sessions::check_id;
use super::state::Shared;
use super::texting;
use super::webhook::{self, Webhook};

pub(crate) use super::run_control::{answer, cancel_run};

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
        None => Start::Thread(Box::new(Thread::from_messages([troupe::Message::user(
            body.task,
        )]))),
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
