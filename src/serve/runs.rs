//! The runs API: the routes that start, list, show, answer and cancel
//! runs, and the task that drives a run in the background.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use troupe::{RunResult, Thread, Workflow};

use super::body::JsonBody;
use super::error::ApiError;
use super::run::{Run, Status};
use super::sessions::check_id;
use super::state::Shared;
use super::texting;

/// What a stretch of a run starts from.
pub(crate) enum Start {
    /// A thread (the task, or the messages an OpenAI client sent).
    Thread(Thread),
    /// The next user turn of the run's session.
    Session(String),
    /// An answer to request `request` in the thread of a run waiting.
    Answer {
        /// The request's id.
        request: String,
        /// The answer.
        answer: String,
        /// The thread the run ended waiting with.
        thread: Thread,
    },
}

/// Runs a stretch of `run` in the background, holding a run slot.
pub(crate) fn spawn(state: Shared, run: Arc<Run>, start: Start, slot: OwnedSemaphorePermit) {
    tokio::spawn(async move {
        let result = drive(&state, &run, start).await;
        run.finish(result);
        drop(slot);
    });
}

/// Runs a stretch of `run` from `start` to its end.
pub(crate) async fn drive(state: &Shared, run: &Run, start: Start) -> Result<RunResult, String> {
    let team = state.team(Some(&run.team)).map_err(|e| e.message)?;
    // One owner per run: a `troupe run --resume` of this run (or another
    // server on the same store) waits until this stretch ends.
    let _lease = team
        .store
        .leases
        .acquire(&run.id)
        .await
        .map_err(|e| e.to_string())?;
    let workflow = &team.built.workflow;
    match (start, &run.session) {
        (Start::Thread(thread), _) => workflow
            .run(thread, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (Start::Session(text), Some(id)) => {
            // A session whose last turn asked a question: this message is
            // the answer (the oldest question open), as a chat user gives it.
            let stored = team
                .store
                .threads
                .load_thread(id)
                .await
                .map_err(|e| format!("cannot read session `{id}`: {e}"))?;
            let asked = stored
                .as_ref()
                .and_then(|t| Workflow::pending_requests(t).into_iter().next());
            match (stored, asked) {
                (Some(thread), Some(q)) => {
                    let r = workflow
                        .respond_in_thread(thread, &q.id, text, &run.ctx)
                        .await
                        .map_err(|e| e.to_string())?;
                    save(team, id, &r.thread).await?;
                    Ok(r)
                }
                _ => team
                    .session
                    .clone()
                    .with_context(run.ctx.clone())
                    .send(id, text)
                    .await
                    .map_err(|e| e.to_string()),
            }
        }
        (Start::Session(text), None) => workflow
            .run_task(text, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (
            Start::Answer {
                request,
                answer,
                thread,
            },
            session,
        ) => {
            let r = workflow
                .respond_in_thread(thread, &request, answer, &run.ctx)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(id) = session {
                save(team, id, &r.thread).await?;
            }
            Ok(r)
        }
    }
}

/// Saves the thread an answer ran on as session `id`.
async fn save(team: &super::team::Team, id: &str, thread: &Thread) -> Result<(), String> {
    team.store
        .threads
        .save_thread(id, thread)
        .await
        .map_err(|e| format!("the answer ran but session `{id}` was not saved: {e}"))
}

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
}

/// `POST /runs`: starts a run; 201.
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
    let policy = body
        .double_texting
        .as_deref()
        .map(texting::parse)
        .transpose()?;
    let team = state.team(body.team.as_deref())?.name.clone();
    let slot = state.limits.run_slot()?;
    let (run, turn) = texting::admit(&state, &team, body.session.as_deref(), policy, || {
        state.runs.create(&team, &body.task, body.session.clone())
    })?;
    let start = match &body.session {
        Some(_) => Start::Session(body.task),
        None => Start::Thread(Thread::from_messages([troupe::Message::user(body.task)])),
    };
    texting::spawn(state.clone(), run.clone(), start, slot, turn);
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": run.id, "status": "running", "session": run.session, "team": team})),
    ))
}

/// `GET /runs`: newest first.
pub(crate) async fn list(Axum(state): Axum<Shared>) -> Json<Value> {
    Json(Value::Array(
        state.runs.all().iter().map(|r| r.summary()).collect(),
    ))
}

/// `GET /runs/{id}`.
pub(crate) async fn status(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.runs.get(&id)?.detail()))
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
    let run = state.runs.get(&id)?;
    answer(&state, &run, body.request_id.as_deref(), body.answer)?;
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
    let run = state.runs.get(&id)?;
    let status = cancel_run(&run)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": run.id, "status": status.as_str()})),
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
