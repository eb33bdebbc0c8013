//! The HTTP+JSON binding (A2A v1.0 §11) beside JSON-RPC, under each
//! team's A2A path: `/a2a/{team}/v1` is the interface's URL, and under it
//!
//! | route | method |
//! |---|---|
//! | `POST /message:send`, `POST /message:stream` (SSE) | `SendMessage`, `SendStreamingMessage` |
//! | `GET /tasks/{id}?historyLength=N` | `GetTask` |
//! | `GET /tasks?contextId=…&status=…&pageSize=…&pageToken=…` | `ListTasks` |
//! | `POST /tasks/{id}:cancel`, `POST /tasks/{id}:subscribe` (SSE) | `CancelTask`, `SubscribeToTask` |
//! | `POST`/`GET /tasks/{id}/pushNotificationConfigs[/{configId}]`, `DELETE …/{configId}` | the push config methods |
//! | `GET /extendedAgentCard` | `GetExtendedAgentCard` |
//!
//! Each call goes through the same code as its JSON-RPC method; answers
//! are `application/a2a+json`, streams' events bare `StreamResponse`s,
//! errors `google.rpc.Status` objects with the HTTP status of the spec's
//! mapping (§5.4) and a `google.rpc.ErrorInfo` naming the A2A error.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as Axum};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use troupe::agents::a2a::types::{code, method};

use super::super::completion::answering;
use super::super::state::Shared;
use super::envelope::{self, RpcError};
use super::{
    EXTENDED_CARD, LIST_TASKS, Outcome, PUSH_CREATE, PUSH_DELETE, PUSH_GET, PUSH_LIST, SUBSCRIBE,
    dispatch, stream,
};

/// The media type of the binding's bodies.
const MEDIA_TYPE: &str = "application/a2a+json";

/// The binding's routes.
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/a2a/{team}/v1/message:send", post(send))
        .route("/a2a/{team}/v1/message:stream", post(stream_send))
        .route("/a2a/{team}/v1/tasks", get(list))
        .route(
            "/a2a/{team}/v1/tasks/{task}",
            get(get_task).post(task_action),
        )
        .route(
            "/a2a/{team}/v1/tasks/{task}/pushNotificationConfigs",
            post(push_create).get(push_list),
        )
        .route(
            "/a2a/{team}/v1/tasks/{task}/pushNotificationConfigs/{config}",
            get(push_get).delete(push_delete),
        )
        .route("/a2a/{team}/v1/extendedAgentCard", get(extended_card))
}

/// The HTTP status, gRPC status name and A2A reason of an error code.
fn mapping(code: i64) -> (StatusCode, &'static str, Option<&'static str>) {
    let failed = (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION");
    let (status, name) = match code {
        code::TASK_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        code::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        code::INTERNAL_ERROR | -32006 => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        code::PARSE_ERROR | code::INVALID_REQUEST | code::INVALID_PARAMS | -32005 => {
            (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT")
        }
        _ => failed,
    };
    let reason = match code {
        -32001 => Some("TASK_NOT_FOUND"),
        -32002 => Some("TASK_NOT_CANCELABLE"),
        -32003 => Some("PUSH_NOTIFICATION_NOT_SUPPORTED"),
        -32004 => Some("UNSUPPORTED_OPERATION"),
        -32005 => Some("CONTENT_TYPE_NOT_SUPPORTED"),
        -32006 => Some("INVALID_AGENT_RESPONSE"),
        -32007 => Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        -32008 => Some("EXTENSION_SUPPORT_REQUIRED"),
        -32009 => Some("VERSION_NOT_SUPPORTED"),
        code::INVALID_PARAMS => Some("INVALID_PARAMS"),
        _ => None,
    };
    (status, name, reason)
}

/// `body` as an `application/a2a+json` response of `status`.
fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    response
}

/// An error as a `google.rpc.Status`.
fn error(e: &RpcError) -> Response {
    let (status, name, reason) = mapping(e.code);
    let details: Vec<Value> = reason
        .map(|r| {
            json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": r,
                "domain": "a2a-protocol.org",
            })
        })
        .into_iter()
        .collect();
    let body = json!({"error": {
        "code": status.as_u16(),
        "status": name,
        "message": e.message,
        "details": details,
    }});
    json_response(status, &body)
}

/// Runs `method` with `params` on `team` (after the version check).
async fn call(
    state: &Shared,
    team: String,
    method: &str,
    params: Value,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Response {
    if let Err(e) = envelope::version(headers, query) {
        return error(&e);
    }
    match dispatch(state, Some(team), method, params, headers).await {
        Outcome::Value(Ok(v)) => json_response(StatusCode::OK, &v),
        Outcome::Value(Err(e)) => error(&e),
        Outcome::Stream(run, from) => {
            let answering = answering(state, &run.team).unwrap_or_default();
            stream::respond(None, run, from, answering)
        }
    }
}

/// A request body: a JSON object (`{}` when empty).
fn body_object(body: &[u8]) -> Result<Value, RpcError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(RpcError::params("the body must be a JSON object")),
        Err(e) => Err(RpcError::new(
            code::PARSE_ERROR,
            format!("invalid JSON payload: {e}"),
        )),
    }
}

/// The query's parameters as an object: integers for the numeric ones,
/// booleans for the boolean ones (a value that does not parse stays a
/// string, for the method's check to refuse), strings for the rest.
fn query_object(query: Option<&str>) -> Value {
    let mut out = Map::new();
    let Some(q) = query else {
        return Value::Object(out);
    };
    let Ok(url) = reqwest::Url::parse(&format!("http://q/?{q}")) else {
        return Value::Object(out);
    };
    for (k, v) in url.query_pairs() {
        let value = match k.as_ref() {
            "historyLength" | "pageSize" => v
                .parse::<i64>()
                .map_or_else(|_| Value::String(v.to_string()), Value::from),
            "includeArtifacts" => match v.as_ref() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(v.to_string()),
            },
            _ => Value::String(v.to_string()),
        };
        out.insert(k.into_owned(), value);
    }
    Value::Object(out)
}

/// `object` with `key` set to `value`.
fn with(mut object: Value, key: &str, value: &str) -> Value {
    if let Value::Object(map) = &mut object {
        map.insert(key.into(), Value::String(value.into()));
    }
    object
}

async fn send(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    match body_object(&body) {
        Ok(p) => call(&state, team, method::SEND, p, &headers, q.as_deref()).await,
        Err(e) => error(&e),
    }
}

async fn stream_send(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    match body_object(&body) {
        Ok(p) => call(&state, team, method::STREAM, p, &headers, q.as_deref()).await,
        Err(e) => error(&e),
    }
}

async fn list(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let params = query_object(q.as_deref());
    call(&state, team, LIST_TASKS, params, &headers, q.as_deref()).await
}

async fn get_task(
    Axum(state): Axum<Shared>,
    Path((team, task)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let params = with(query_object(q.as_deref()), "id", &task);
    call(
        &state,
        team,
        method::GET_TASK,
        params,
        &headers,
        q.as_deref(),
    )
    .await
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`.
async fn task_action(
    Axum(state): Axum<Shared>,
    Path((team, task)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let (id, action) = task.rsplit_once(':').unwrap_or((task.as_str(), ""));
    let method = match action {
        "cancel" => method::CANCEL_TASK,
        "subscribe" => SUBSCRIBE,
        _ => {
            return error(&RpcError::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "no route `POST tasks/{task}`: `tasks/{{id}}:cancel` or `tasks/{{id}}:subscribe`"
                ),
            ));
        }
    };
    match body_object(&body) {
        Ok(p) => {
            call(
                &state,
                team,
                method,
                with(p, "id", id),
                &headers,
                q.as_deref(),
            )
            .await
        }
        Err(e) => error(&e),
    }
}

async fn push_create(
    Axum(state): Axum<Shared>,
    Path((team, task)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    match body_object(&body) {
        Ok(p) => {
            let p = with(p, "taskId", &task);
            call(&state, team, PUSH_CREATE, p, &headers, q.as_deref()).await
        }
        Err(e) => error(&e),
    }
}

async fn push_list(
    Axum(state): Axum<Shared>,
    Path((team, task)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let params = with(query_object(q.as_deref()), "taskId", &task);
    call(&state, team, PUSH_LIST, params, &headers, q.as_deref()).await
}

async fn push_get(
    Axum(state): Axum<Shared>,
    Path((team, task, config)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let params = with(json!({"taskId": task}), "id", &config);
    call(&state, team, PUSH_GET, params, &headers, q.as_deref()).await
}

async fn push_delete(
    Axum(state): Axum<Shared>,
    Path((team, task, config)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let params = with(json!({"taskId": task}), "id", &config);
    call(&state, team, PUSH_DELETE, params, &headers, q.as_deref()).await
}

async fn extended_card(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    call(
        &state,
        team,
        EXTENDED_CARD,
        json!({}),
        &headers,
        q.as_deref(),
    )
    .await
}
