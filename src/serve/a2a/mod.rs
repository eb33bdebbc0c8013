//! The served teams as A2A agents (protocol 1.0, JSON-RPC binding, as the
//! official SDKs speak it): an agent card per team, and `SendMessage`,
//! `SendStreamingMessage`, `GetTask` and `CancelTask` (the 0.3 names
//! `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` are taken
//! too) at `POST /a2a/{team}` (`POST /a2a`: the first team), behind the
//! same token as every route but the cards (public: they announce it).
//!
//! A task is a run of the runs API (`GET /runs/{id}` shows it too), a
//! context a stored session: a message without a task starts a run in
//! its context's session (a new one when it names none), and a message
//! with the id of a task waiting for input (`TASK_STATE_INPUT_REQUIRED`,
//! a troupe input request) answers its oldest question — or the one its
//! metadata's `troupe.request_id` names — and runs it on.

mod card;
mod stream;
mod task;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::Value;
use troupe::agents::a2a::types::{
    JsonRpcRequest, JsonRpcResponse, SendMessageRequest, SendMessageResponse, TaskIdParams, code,
    method,
};

use super::completion::answering;
use super::drive::Start;
use super::error::ApiError;
use super::run::{Run, Status};
use super::runs;
use super::sessions::check_id;
use super::state::Shared;
use super::texting;

/// The metadata key of a follow-up message naming the request it answers.
const REQUEST_KEY: &str = "troupe.request_id";

/// The metadata key of a message's double-texting policy (`texting.rs`).
const TEXTING_KEY: &str = "troupe.double_texting";
/// How long `CancelTask` waits for the run to take the cancel.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The A2A routes.
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/.well-known/agent-card.json", get(card::default_card))
        .route(
            "/a2a/{team}/.well-known/agent-card.json",
            get(card::team_card),
        )
        .route("/a2a", post(rpc_default))
        .route("/a2a/{team}", post(rpc_team))
}

/// A JSON-RPC error to answer.
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: troupe::secrets::redact(&message.into()).into_owned(),
        }
    }

    fn params(e: ApiError) -> Self {
        Self::new(code::INVALID_PARAMS, e.message)
    }
}

async fn rpc_default(Axum(state): Axum<Shared>, body: Bytes) -> Response {
    rpc(state, None, body).await
}

async fn rpc_team(Axum(state): Axum<Shared>, Path(team): Path<String>, body: Bytes) -> Response {
    rpc(state, Some(team), body).await
}

fn answer(id: Value, outcome: Result<Value, RpcError>) -> Response {
    let response = match outcome {
        Ok(result) => JsonRpcResponse::result(id, result),
        Err(e) => JsonRpcResponse::error(id, e.code, e.message),
    };
    (StatusCode::OK, Json(response)).into_response()
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

/// One JSON-RPC call.
async fn rpc(state: Shared, team: Option<String>, body: Bytes) -> Response {
    let request: JsonRpcRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let code = if serde_json::from_slice::<Value>(&body).is_ok() {
                code::INVALID_REQUEST
            } else {
                code::PARSE_ERROR
            };
            let e = RpcError::new(code, format!("not a JSON-RPC 2.0 request: {e}"));
            return answer(Value::Null, Err(e));
        }
    };
    let id = request.id;
    let outcome = match request.method.as_str() {
        method::SEND | "message/send" => send(&state, team, request.params).await,
        method::STREAM | "message/stream" => {
            return match begin(&state, team, request.params) {
                Ok((run, from, _)) => {
                    let answering = answering(&state, &run.team).unwrap_or_default();
                    stream::respond(id, run, from, answering)
                }
                Err(e) => answer(id, Err(e)),
            };
        }
        method::GET_TASK | "tasks/get" => get_task(&state, team, request.params),
        method::CANCEL_TASK | "tasks/cancel" => cancel_task(&state, team, request.params).await,
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "no method `{other}`; this agent takes {}, {}, {} and {}",
                method::SEND,
                method::STREAM,
                method::GET_TASK,
                method::CANCEL_TASK
            ),
        )),
    };
    answer(id, outcome)
}

/// The run a task id names, on the team called (404: task not found).
fn run_of(state: &Shared, team: Option<&str>, id: &str) -> Result<Arc<Run>, RpcError> {
    let not_found = || RpcError::new(code::TASK_NOT_FOUND, format!("no task `{id}`"));
    let run = state.runs.get(id).map_err(|_| not_found())?;
    match team {
        Some(t) if t != run.team => Err(not_found()),
        _ => Ok(run),
    }
}

/// Starts the run a message asks for (or answers the task it follows
/// up): the run, the position in its log its new events start at, and
/// whether the caller wants the answer at once.
fn begin(
    state: &Shared,
    team: Option<String>,
    raw: Value,
) -> Result<(Arc<Run>, usize, bool), RpcError> {
    let request: SendMessageRequest = params(raw)?;
    let at_once = request
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately);
    let message = request.message;
    let text = message.text();
    if text.trim().is_empty() {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            "the message has no text part",
        ));
    }
    let context = message.context_id.filter(|c| !c.is_empty());
    if let Some(task_id) = message.task_id.filter(|t| !t.is_empty()) {
        let run = run_of(state, team.as_deref(), &task_id)?;
        if let Some(c) = &context
            && run.session.as_deref() != Some(c.as_str())
        {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                format!("task `{task_id}` is not in context `{c}`"),
            ));
        }
        let request_id = message
            .metadata
            .as_ref()
            .and_then(|m| m.get(REQUEST_KEY))
            .and_then(Value::as_str);
        let from = run.inner().events.len();
        runs::answer(state, &run, request_id, text).map_err(|e| {
            let code = match e.status {
                StatusCode::CONFLICT => code::UNSUPPORTED_OPERATION,
                StatusCode::NOT_FOUND => code::INVALID_PARAMS,
                _ => code::INTERNAL_ERROR,
            };
            RpcError::new(
                code,
                format!("task `{task_id}` cannot take a follow-up: {}", e.message),
            )
        })?;
        return Ok((run, from, at_once));
    }
    let team = state.team(team.as_deref()).map_err(RpcError::params)?;
    let session = match context {
        Some(c) => {
            check_id(&c).map_err(RpcError::params)?;
            c
        }
        None => format!("a2a-{}", troupe::MessageId::new()),
    };
    let slot = state
        .limits
        .run_slot()
        .map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.message))?;
    let policy = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(TEXTING_KEY))
        .and_then(Value::as_str)
        .map(texting::parse)
        .transpose()
        .map_err(RpcError::params)?;
    let (run, turn) = texting::admit(state, &team.name, Some(&session), policy, || {
        state.runs.create(&team.name, &text, Some(session.clone()))
    })
    .map_err(|e| RpcError::new(code::UNSUPPORTED_OPERATION, e.message))?;
    texting::spawn(state.clone(), run.clone(), Start::Session(text), slot, turn);
    Ok((run, 0, at_once))
}

/// Waits until `run` stops running (at most `limit`, when given).
async fn settled(run: &Run, limit: Option<Duration>) {
    let mut changes = run.watch();
    let wait = async {
        loop {
            changes.borrow_and_update();
            if run.inner().status() != Status::Running || changes.changed().await.is_err() {
                return;
            }
        }
    };
    match limit {
        Some(d) => {
            let _ = tokio::time::timeout(d, wait).await;
        }
        None => wait.await,
    }
}

/// `SendMessage`: the task once it stops running (waiting for input
/// included), or at once with `returnImmediately`.
async fn send(state: &Shared, team: Option<String>, raw: Value) -> Result<Value, RpcError> {
    let (run, _, at_once) = begin(state, team, raw)?;
    if !at_once {
        settled(&run, None).await;
    }
    to_value(SendMessageResponse {
        task: Some(task::task(&run, None)),
        message: None,
    })
}

/// `GetTask`.
fn get_task(state: &Shared, team: Option<String>, raw: Value) -> Result<Value, RpcError> {
    let request: TaskIdParams = params(raw)?;
    let run = run_of(state, team.as_deref(), &request.id)?;
    to_value(task::task(&run, request.history_length))
}

/// `CancelTask`: cancels a task under way or waiting for input; the task
/// once the run took the cancel.
async fn cancel_task(state: &Shared, team: Option<String>, raw: Value) -> Result<Value, RpcError> {
    let request: TaskIdParams = params(raw)?;
    let run = run_of(state, team.as_deref(), &request.id)?;
    runs::cancel_run(&run).map_err(|e| {
        RpcError::new(
            code::TASK_NOT_CANCELABLE,
            format!("task `{}` cannot be cancelled: {}", request.id, e.message),
        )
    })?;
    settled(&run, Some(CANCEL_WAIT)).await;
    to_value(task::task(&run, None))
}
