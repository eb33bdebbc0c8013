//! The served teams as A2A agents (protocol 1.0, JSON-RPC binding, as the
//! official SDKs speak it): an agent card per team, and every method of
//! the binding — `SendMessage` (blocking, or at once with
//! `configuration.returnImmediately: true` / `blocking: false`),
//! `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
//! `SubscribeToTask`, the push notification configs (`push.rs`) and
//! `GetExtendedAgentCard` — at `POST /a2a/{team}` (`POST /a2a`: the first
//! team), behind the same token as every route but the cards (public:
//! they announce it). Calls are read strictly (`envelope.rs`): a bad
//! envelope, bad parameters or an unsupported `A2A-Version` get the
//! spec's error codes; the 0.3 method names (`message/send`…) are
//! refused with `VersionNotSupportedError`, saying what to call instead.
//!
//! A task is a run of the runs API (`GET /runs/{id}` shows it too), a
//! context a stored session: a message without a task starts a run in
//! its context's session (a new one when it names none), and a message
//! with the id of a task waiting for input (`TASK_STATE_INPUT_REQUIRED`,
//! a troupe input request) answers its oldest question — or the one its
//! metadata's `troupe.request_id` names — and runs it on.

mod card;
mod envelope;
mod list;
mod parts;
mod push;
mod push_shared;
mod rest;
mod stream;
mod task;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as Axum};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;
use troupe::agents::a2a::types::{
    JsonRpcResponse, SendMessageRequest, SendMessageResponse, TaskState, code, method,
};

use super::board;
use super::completion::answering;
use super::drive::Start;
use super::run::{Run, Status};
use super::runs;
use super::sessions::check_id;
use super::state::Shared;
use super::texting;
use envelope::{RpcError, params};

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
        .merge(rest::routes())
}

async fn rpc_default(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    rpc(state, None, &headers, query.as_deref(), body).await
}

async fn rpc_team(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    rpc(state, Some(team), &headers, query.as_deref(), body).await
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

/// One JSON-RPC call.
async fn rpc(
    state: Shared,
    team: Option<String>,
    headers: &HeaderMap,
    query: Option<&str>,
    body: Bytes,
) -> Response {
    let call = match envelope::read(&body) {
        Ok(call) => call,
        Err((id, e)) => return answer(id, Err(e)),
    };
    let id = call.id;
    if let Err(e) = envelope::version(headers, query) {
        return answer(id, Err(e));
    }
    match dispatch(&state, team, &call.method, call.params, headers).await {
        Outcome::Value(v) => answer(id, v),
        Outcome::Stream(run, from) => {
            let answering = answering(&state, &run.team).unwrap_or_default();
            stream::respond(Some(id), run, from, answering)
        }
    }
}

/// What a method call gives: a value (or an error), or a task's stream
/// from a position of its run's log.
pub(crate) enum Outcome {
    /// The result, or the error.
    Value(Result<Value, RpcError>),
    /// The task to stream, from this position of its run's events.
    Stream(Arc<Run>, usize),
}

/// Calls `method` with `raw` parameters on `team` (both bindings).
pub(crate) async fn dispatch(
    state: &Shared,
    team: Option<String>,
    method: &str,
    raw: Value,
    headers: &HeaderMap,
) -> Outcome {
    if matches!(method, SUBSCRIBE | method::GET_TASK | method::CANCEL_TASK)
        && let Ok(id) = envelope::task_id(&raw, "id")
    {
        // A task of another worker on a shared database: followed here
        // from now on (`board/`); not found, the method says so below.
        let _ = board::find(state, &id).await;
    }
    let value = match method {
        method::SEND => send(state, team, raw).await,
        method::STREAM => {
            return match begin(state, team, raw).await {
                Ok((run, from, _)) => Outcome::Stream(run, from),
                Err(e) => Outcome::Value(Err(e)),
            };
        }
        SUBSCRIBE => {
            return match subscribe(state, team.as_deref(), &raw) {
                Ok(run) => {
                    let from = run.inner().events.len();
                    Outcome::Stream(run, from)
                }
                Err(e) => Outcome::Value(Err(e)),
            };
        }
        method::GET_TASK => get_task(state, team, &raw),
        LIST_TASKS => match board::all_runs(state).await {
            // Every worker's tasks on a shared database (`board/`).
            Ok(runs) => list::list(runs, team.as_deref(), &raw),
            Err(e) => Err(RpcError::new(code::INTERNAL_ERROR, e.message)),
        },
        method::CANCEL_TASK => cancel_task(state, team, &raw).await,
        PUSH_CREATE | PUSH_GET | PUSH_LIST | PUSH_DELETE => {
            push_config(state, team.as_deref(), method, raw).await
        }
        EXTENDED_CARD => extended_card(state, team.as_deref(), headers),
        legacy @ ("message/send"
        | "message/stream"
        | "tasks/get"
        | "tasks/cancel"
        | "tasks/resubscribe"
        | "tasks/pushNotificationConfig/set"
        | "tasks/pushNotificationConfig/get"
        | "tasks/pushNotificationConfig/list"
        | "tasks/pushNotificationConfig/delete"
        | "agent/getAuthenticatedExtendedCard") => {
            let e = envelope::refuse_version("0.3");
            Err(RpcError::new(
                e.code,
                format!("`{legacy}` is an A2A 0.3 method. {}", e.message),
            ))
        }
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "no method `{other}`; this agent takes {}",
                METHODS.join(", ")
            ),
        )),
    };
    Outcome::Value(value)
}

/// `SubscribeToTask`.
pub(crate) const SUBSCRIBE: &str = method::SUBSCRIBE;
/// `ListTasks`.
pub(crate) const LIST_TASKS: &str = method::LIST_TASKS;
/// `CreateTaskPushNotificationConfig`.
pub(crate) const PUSH_CREATE: &str = "CreateTaskPushNotificationConfig";
/// `GetTaskPushNotificationConfig`.
pub(crate) const PUSH_GET: &str = "GetTaskPushNotificationConfig";
/// `ListTaskPushNotificationConfigs`.
pub(crate) const PUSH_LIST: &str = "ListTaskPushNotificationConfigs";
/// `DeleteTaskPushNotificationConfig`.
pub(crate) const PUSH_DELETE: &str = "DeleteTaskPushNotificationConfig";
/// `GetExtendedAgentCard`.
pub(crate) const EXTENDED_CARD: &str = "GetExtendedAgentCard";

/// Every method served.
const METHODS: [&str; 11] = [
    method::SEND,
    method::STREAM,
    method::GET_TASK,
    LIST_TASKS,
    method::CANCEL_TASK,
    SUBSCRIBE,
    PUSH_CREATE,
    PUSH_GET,
    PUSH_LIST,
    PUSH_DELETE,
    EXTENDED_CARD,
];

/// The run a task id names, on the team called (404: task not found).
fn run_of(state: &Shared, team: Option<&str>, id: &str) -> Result<Arc<Run>, RpcError> {
    let not_found = || RpcError::new(code::TASK_NOT_FOUND, format!("no task `{id}`"));
    let run = board::lookup(state, id).map_err(|_| not_found())?;
    match team {
        Some(t) if t != run.team => Err(not_found()),
        _ => Ok(run),
    }
}

/// Starts the run a message asks for (or answers the task it follows
/// up): the run, the position in its log its new events start at, and
/// whether the caller wants the answer at once.
async fn begin(
    state: &Shared,
    team: Option<String>,
    raw: Value,
) -> Result<(Arc<Run>, usize, bool), RpcError> {
    envelope::message(&raw)?;
    let configuration = raw.get("configuration").cloned().unwrap_or(Value::Null);
    let at_once = configuration.get("returnImmediately") == Some(&Value::Bool(true))
        || configuration.get("blocking") == Some(&Value::Bool(false));
    let push = ["taskPushNotificationConfig", "pushNotificationConfig"]
        .iter()
        .find_map(|k| configuration.get(*k).filter(|v| !v.is_null()).cloned());
    if let Some(Value::Array(modes)) = configuration.get("acceptedOutputModes")
        && !modes.is_empty()
        && !modes.iter().filter_map(Value::as_str).any(|m| {
            matches!(
                m,
                "text/plain" | "text/*" | "*/*" | "text" | "application/json"
            )
        })
    {
        return Err(RpcError::new(
            envelope::CONTENT_TYPE_NOT_SUPPORTED,
            "this agent answers in text/plain, which `acceptedOutputModes` leaves out",
        ));
    }
    let request: SendMessageRequest = params(raw)?;
    let message = request.message;
    let text = parts::task_text(&message.parts)?;
    if text.trim().is_empty() {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            "the message has no text part",
        ));
    }
    let context = message.context_id.filter(|c| !c.is_empty());
    if let Some(task_id) = message.task_id.filter(|t| !t.is_empty()) {
        // A task of another worker on a shared database: answered through
        // it (`board/forward.rs`).
        let _ = board::find(state, &task_id).await;
        let run = run_of(state, team.as_deref(), &task_id)?;
        // A task over takes no more messages (spec §3.1.1); one under way
        // takes them once it waits for input.
        let st = task::state(run.inner().status());
        if st != TaskState::InputRequired {
            let why = if st.is_terminal() {
                "a task over takes no more messages: send one without `taskId` (and the same `contextId`) to go on in its context"
            } else {
                "it takes a message only while it waits for input (TASK_STATE_INPUT_REQUIRED)"
            };
            return Err(RpcError::new(
                code::UNSUPPORTED_OPERATION,
                format!("task `{task_id}` is {}: {why}", state_name(st)),
            ));
        }
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
        let (run, from) = board::answer(state, &task_id, request_id, text)
            .await
            .map_err(|e| {
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
        if let Some(p) = push {
            match board::board_of(state, &run.team) {
                Some(b) => push_shared::create(&b, &run, p).await.map(|_| ())?,
                None => push::create(&run, p).map(|_| ())?,
            }
        }
        return Ok((run, from, at_once));
    }
    let team = state
        .team(team.as_deref())
        .map_err(|e| RpcError::params(e.message))?;
    let session = match context {
        Some(c) => {
            check_id(&c).map_err(|e| RpcError::params(e.message))?;
            c
        }
        None => format!("a2a-{}", troupe::message::MessageId::new()),
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
        .map_err(|e| RpcError::params(e.message))?;
    let (run, turn) = texting::admit(state, &team.name, Some(&session), policy, || {
        state.runs.create(&team.name, &text, Some(session.clone()))
    })
    .map_err(|e| RpcError::new(code::UNSUPPORTED_OPERATION, e.message))?;
    // The webhook is registered before the run starts: it hears every state.
    if let Some(p) = push {
        match board::board_of(state, &run.team) {
            Some(b) => push_shared::create(&b, &run, p).await.map(|_| ())?,
            None => push::create(&run, p).map(|_| ())?,
        }
    }
    texting::spawn(state.clone(), run.clone(), Start::Session(text), slot, turn);
    Ok((run, 0, at_once))
}

/// Starts delivering, on a shared database, the push configs of the
/// tasks this worker holds (`push_shared.rs`).
pub(crate) fn start_push(state: &Shared) {
    push_shared::start(state);
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
/// included), or at once with `returnImmediately` (`blocking: false`).
async fn send(state: &Shared, team: Option<String>, raw: Value) -> Result<Value, RpcError> {
    let history = envelope::history_length(&raw)?;
    let (run, _, at_once) = begin(state, team, raw).await?;
    if !at_once {
        settled(&run, None).await;
    }
    to_value(SendMessageResponse {
        task: Some(task::task(&run, history)),
        message: None,
    })
}

/// `GetTask`, with at most `historyLength` messages of history.
fn get_task(state: &Shared, team: Option<String>, raw: &Value) -> Result<Value, RpcError> {
    let id = envelope::task_id(raw, "id")?;
    let history = envelope::history_length(raw)?;
    let run = run_of(state, team.as_deref(), &id)?;
    to_value(task::task(&run, history))
}

/// `CancelTask`: cancels a task under way or waiting for input; the task
/// once the run took the cancel. A task over already is not cancelable.
async fn cancel_task(state: &Shared, team: Option<String>, raw: &Value) -> Result<Value, RpcError> {
    let id = envelope::task_id(raw, "id")?;
    let run = run_of(state, team.as_deref(), &id)?;
    let not_cancelable = |why: &str| {
        RpcError::new(
            code::TASK_NOT_CANCELABLE,
            format!("task `{id}` cannot be cancelled: {why}"),
        )
    };
    let st = task::state(run.inner().status());
    if st.is_terminal() {
        return Err(not_cancelable(&format!("it is {}", state_name(st))));
    }
    if board::is_remote(&run) {
        board::cancel(state, &id)
            .await
            .map_err(|e| not_cancelable(&e.message))?;
    } else {
        runs::cancel_run(&run).map_err(|e| not_cancelable(&e.message))?;
    }
    settled(&run, Some(CANCEL_WAIT)).await;
    to_value(task::task(&run, None))
}

/// A task state as the wire spells it.
fn state_name(state: TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `SubscribeToTask`: the task to stream, unless it is over
/// (`UnsupportedOperationError`).
fn subscribe(state: &Shared, team: Option<&str>, raw: &Value) -> Result<Arc<Run>, RpcError> {
    let id = envelope::task_id(raw, "id")?;
    let run = run_of(state, team, &id)?;
    let st = task::state(run.inner().status());
    if st.is_terminal() {
        return Err(RpcError::new(
            code::UNSUPPORTED_OPERATION,
            format!(
                "task `{id}` is {}: there is nothing to subscribe to",
                state_name(st)
            ),
        ));
    }
    Ok(run)
}

/// The push notification config methods, on the task `taskId` names.
async fn push_config(
    state: &Shared,
    team: Option<&str>,
    method: &str,
    raw: Value,
) -> Result<Value, RpcError> {
    let task = envelope::task_id(&raw, "taskId")?;
    // Any worker's task on a shared database, its configs kept there.
    let _ = board::find(state, &task).await;
    let run = run_of(state, team, &task)?;
    if let Some(b) = board::board_of(state, &run.team) {
        return push_shared::method(&b, &run, method, raw).await;
    }
    match method {
        PUSH_CREATE => push::create(&run, raw),
        PUSH_GET => push::get(&run, &raw),
        PUSH_LIST => push::list(&run),
        _ => push::delete(&run, &raw),
    }
}

/// `GetExtendedAgentCard`: the card, to a caller that authenticated (the
/// route is behind the token); without a token set there is no
/// authenticated caller to extend it for.
fn extended_card(
    state: &Shared,
    team: Option<&str>,
    headers: &HeaderMap,
) -> Result<Value, RpcError> {
    if state.token.is_none() {
        return Err(RpcError::new(
            envelope::EXTENDED_CARD_NOT_CONFIGURED,
            "no extended agent card: the server has no token (TROUPE_SERVE_TOKEN), so no caller is authenticated",
        ));
    }
    let team = state.team(team).map_err(|e| RpcError::params(e.message))?;
    to_value(card::card(team, &card::base(headers), true))
}
