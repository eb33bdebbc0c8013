//! The team as an OpenAI model: `GET /v1/models` and `POST
//! /v1/chat/completions`, streaming (SSE chunks, `data: [DONE]`, a usage
//! chunk when `stream_options.include_usage`) and not.
//!
//! The conversation is the messages sent (stateless), or, when the request
//! names a session (the `X-Troupe-Session` header, else the `user` field),
//! the stored conversation, continued with the last user message sent.
//! The answer is the team's final response (its answering agent's last
//! message, `answer:`), streamed from its first token (`completion.rs`);
//! what the agents said to each other on the way, and the tool calls they
//! made, stay inside unless `troupe_progress` asks for them (they are in
//! the run's events: `GET /runs/{id}/events`, the run id being in the
//! `X-Troupe-Run` header).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::State as Axum;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use troupe::{Message, Thread};

use super::body::JsonBody;
use super::completion::{self, Meta, Options, answering, settle};
use super::drive::Start;
use super::error::ApiError;
use super::sessions::check_id;
use super::state::Shared;
use super::texting;

/// The header naming a stored session.
const SESSION_HEADER: &str = "x-troupe-session";

/// A chat completion request (fields not listed are accepted and ignored:
/// the team's own models and settings apply).
#[derive(Deserialize)]
pub(crate) struct ChatRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    user: Option<String>,
    /// Also stream the other agents' words and tool calls, as
    /// `reasoning_content` deltas.
    #[serde(default)]
    troupe_progress: bool,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

impl ChatMessage {
    /// The text: a string, or the text parts of a list of parts.
    fn text(&self) -> Result<String, ApiError> {
        match &self.content {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Array(parts)) => Ok(parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")),
            Some(other) => Err(ApiError::bad_request(format!(
                "a message's `content` is a string or a list of parts, not {other}"
            ))),
        }
    }
}

/// `GET /v1/models`: every team, as a model.
pub(crate) async fn models(Axum(state): Axum<Shared>) -> Json<Value> {
    let data: Vec<Value> = state
        .teams
        .keys()
        .map(|name| json!({"id": name, "object": "model", "created": 0, "owned_by": "troupe"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// `POST /v1/chat/completions`.
pub(crate) async fn completions(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<ChatRequest>,
) -> Result<Response, ApiError> {
    let team = pick_team(&state, request.model.as_deref())?;
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(request.user.clone())
        .filter(|s| !s.is_empty());
    if let Some(s) = &session {
        check_id(s)?;
    }
    let last_user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map(ChatMessage::text)
        .transpose()?
        .ok_or_else(|| ApiError::bad_request("`messages` holds no user message".into()))?;
    let start = match &session {
        Some(_) => Start::Session(last_user.clone()),
        None => Start::Thread(Box::new(thread_of(&request.messages)?)),
    };
    let policy = texting::asked(&headers)?;
    // Only a streamed answer needs them; asked now, so a bad team fails
    // before a run is made.
    let answering_paths = if request.stream {
        answering(&state, &team)?
    } else {
        Vec::new()
    };
    let slot = state.limits.run_slot()?;
    let (run, turn) = super::board::admit(&state, &team, session.as_deref(), policy, || {
        state.runs.create(&team, &last_user, session.clone())
    })
    .await?;
    super::lease_ahead::take(&state, &run, &start).await?;
    texting::spawn(state.clone(), run.clone(), start, slot, turn);
    let meta = Meta {
        id: format!("chatcmpl-{}", run.id),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: team,
    };
    let run_header = HeaderValue::from_str(&run.id).ok();
    let mut response = if request.stream {
        let options = Options {
            answering: answering_paths,
            include_usage: request.stream_options.unwrap_or_default().include_usage,
            progress: request.troupe_progress,
        };
        completion::stream(run, meta, options).into_response()
    } else {
        let answer = settle(&run).await?;
        let mut body = meta.object("chat.completion");
        body["choices"] = json!([{
            "index": 0,
            "message": {"role": "assistant", "content": answer.content},
            "finish_reason": "stop",
        }]);
        body["usage"] = answer.usage;
        Json(body).into_response()
    };
    if let Some(h) = run_header {
        response.headers_mut().insert("x-troupe-run", h);
    }
    Ok(response)
}

/// The team `model` names; any name when only one team is served.
fn pick_team(state: &Shared, model: Option<&str>) -> Result<String, ApiError> {
    match model.filter(|m| state.teams.contains_key(*m)) {
        Some(m) => Ok(m.to_string()),
        None if state.teams.len() == 1 => Ok(state.team(None)?.name.clone()),
        None => Err(ApiError::not_found(format!(
            "no model `{}`; served: {}",
            model.unwrap_or(""),
            state.teams.keys().cloned().collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The thread of a stateless request: its messages, in order (tool
/// messages are left out: the team has tools of its own).
fn thread_of(messages: &[ChatMessage]) -> Result<Thread, ApiError> {
    let mut thread = Thread::new();
    for m in messages {
        let text = m.text()?;
        let message = match m.role.as_str() {
            "user" => Message::user(text),
            "system" | "developer" => Message::text("system", text),
            "assistant" => Message::text("assistant", text),
            "tool" | "function" => continue,
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown message role `{other}` (user, assistant, system, developer, tool)"
                )));
            }
        };
        thread.push(message);
    }
    Ok(thread)
}
