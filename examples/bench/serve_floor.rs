//! The floor of the `serve` workload: the least a server can do for it on
//! this machine, with the same client (`bench serve --server floor`).
//!
//! `bench serve_floor` is a server that speaks just enough of troupe's
//! OpenAI endpoint for the workload's client: `POST /v1/chat/completions`
//! (with `X-Troupe-Session`, streamed or not) keeps the user's message in
//! the session, waits L three times in a row (the three agents' model
//! calls, as the scripted model waits) adding each agent's reply, and
//! answers `gamma`; `GET /sessions/{id}` returns the stored messages (so
//! the client's check of every conversation runs as it does against
//! troupe) and `GET /v1/models` the team.
//! Sessions live in one locked map. Nothing else: no workflow, no actors,
//! no events, no checkpoints, no run registry. It runs on the bench's own
//! tokio runtime (multi-threaded unless `--threads` says otherwise, as
//! `troupe serve`) with axum over hyper's HTTP/1, troupe's own stack.
//!
//! So `--server floor` measures what the client, the kernel's loopback
//! connections and an HTTP server cost at K sessions on this machine; what
//! `troupe serve` adds is the difference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::BoxError;
use super::args::Args;
use super::serve_target::ANSWER;

/// The agents' replies, in turn order; the last is the answer.
const REPLIES: [&str; 3] = ["alpha", "beta", ANSWER];

/// The floor server's state: the model's wait and every session's messages.
struct Floor {
    latency: Duration,
    sessions: Mutex<HashMap<String, Vec<Value>>>,
}

/// Serves until killed; says where it listens on stderr, as `troupe serve`.
/// `--latency-ms` is the model's wait.
pub(super) async fn serve_floor(args: &Args) -> Result<Value, BoxError> {
    let state = Arc::new(Floor {
        latency: Duration::from_secs_f64(args.latency_ms / 1e3),
        sessions: Mutex::new(HashMap::new()),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .route("/sessions/{id}", get(stored))
        .route("/v1/models", get(models))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    eprintln!("serve_floor listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Err("the floor server stopped".into())
}

/// Adds `message` to session `id`'s stored conversation.
fn keep_message(sessions: &Mutex<HashMap<String, Vec<Value>>>, id: &str, message: Value) {
    if let Ok(mut map) = sessions.lock() {
        map.entry(id.to_string()).or_default().push(message);
    }
}

async fn complete(State(floor): State<Arc<Floor>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not JSON").into_response();
    };
    let Some(session) = headers
        .get("x-troupe-session")
        .and_then(|v| v.to_str().ok())
    else {
        return (StatusCode::BAD_REQUEST, "no X-Troupe-Session").into_response();
    };
    let Some(user) = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
    else {
        return (StatusCode::BAD_REQUEST, "no messages").into_response();
    };
    keep_message(&floor.sessions, session, user);
    for reply in REPLIES {
        if !floor.latency.is_zero() {
            tokio::time::sleep(floor.latency).await;
        }
        keep_message(
            &floor.sessions,
            session,
            json!({"role": "assistant", "content": reply}),
        );
    }
    let id = "chatcmpl-floor";
    if request["stream"].as_bool() == Some(true) {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "model": "trio",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let body = format!(
            "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            chunk(json!({"role": "assistant"}), Value::Null),
            chunk(json!({"content": ANSWER}), Value::Null),
            chunk(json!({}), json!("stop")),
        );
        return ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    }
    let answer = json!({"id": id, "object": "chat.completion", "model": "trio",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}});
    (
        [(header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}

async fn models() -> Response {
    let list = json!({"object": "list", "data": [{"id": "trio", "object": "model"}]});
    (
        [(header::CONTENT_TYPE, "application/json")],
        list.to_string(),
    )
        .into_response()
}

async fn stored(State(floor): State<Arc<Floor>>, Path(id): Path<String>) -> Response {
    let messages = floor
        .sessions
        .lock()
        .ok()
        .and_then(|map| map.get(&id).cloned())
        .unwrap_or_default();
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"id": id, "messages": messages}).to_string(),
    )
        .into_response()
}
