//! What sets one provider's API apart from another's, for the shared HTTP
//! client ([`HttpModel`](super::HttpModel)): where requests go, how the key
//! is sent, the request body, and how answers and stream events are read.
//!
//! The trait is sealed: the wire formats troupe speaks are the marker types
//! of `model::openai`, `model::anthropic` and `model::responses`.

use reqwest::header::{AUTHORIZATION, HeaderName};
use serde_json::Value;

use crate::model::sse::SseEvent;
use crate::model::{ChatDelta, ChatMessage, ChatRequest, ChatResponse};

/// What reading a body or a stream event found wrong.
#[derive(Debug)]
pub enum WireError {
    /// Not JSON, or JSON of the wrong shape.
    Malformed(String),
    /// The server put an error object in the body (or sent an error event).
    Api(String),
}

/// What one stream event gave.
#[derive(Debug, Default)]
pub struct Step {
    /// The deltas it carried.
    pub deltas: Vec<ChatDelta>,
    /// Whether the stream is over (the rest of the body is ignored).
    pub done: bool,
}

impl Step {
    /// These deltas; the stream goes on.
    pub fn more(deltas: Vec<ChatDelta>) -> Self {
        Step {
            deltas,
            done: false,
        }
    }

    /// These deltas, and the stream is over.
    pub fn last(deltas: Vec<ChatDelta>) -> Self {
        Step { deltas, done: true }
    }
}

/// A provider's wire format, as the HTTP client drives it (crate-private:
/// [`Dialect`] is its public, sealed face).
pub trait Wire: Clone + Send + Sync + 'static {
    /// Reads one streamed answer.
    type Stream: EventReader;

    /// The API's name, for documentation and notes (`OpenAI chat completions`).
    const NAME: &'static str;
    /// The provider as the `gen_ai.provider.name` of a model call's span
    /// names it (`openai`, `anthropic`).
    const PROVIDER: &'static str;
    /// The base URL used when none is given.
    const DEFAULT_BASE_URL: &'static str;
    /// The path appended to the base URL (`chat/completions`).
    const PATH: &'static str;

    /// The header carrying the API key, and its value (by default
    /// `Authorization: Bearer <key>`).
    fn auth_header(&self, key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// Headers every request carries (a header set on the builder with the
    /// same name replaces one of these).
    fn default_headers(&self) -> Vec<(HeaderName, String)> {
        Vec::new()
    }

    /// The JSON body asking `model` for `request`.
    fn request_body(&self, model: &str, request: &ChatRequest, stream: bool) -> Value;

    /// Reads a whole (non-streamed) answer to `request`.
    fn parse_response(&self, request: &ChatRequest, text: &str) -> Result<ChatResponse, WireError>;

    /// A reader of the streamed answer to `request`.
    fn stream_reader(&self, request: &ChatRequest) -> Self::Stream;
}

/// Reads a streamed answer, one server-sent event at a time (keeping what
/// the events before told).
pub trait EventReader: Send + 'static {
    /// Reads one event.
    fn event(&mut self, event: &SseEvent) -> Result<Step, WireError>;
}

/// The system messages' text, joined, for APIs that take instructions
/// apart from the conversation (`None` when there is none).
pub fn instructions(messages: &[ChatMessage]) -> Option<String> {
    let parts: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::System { content } if !content.is_empty() => Some(content.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A user turn's text for APIs with no name field: another agent's name
/// leads it (`alice: …`).
pub fn user_text(content: &str, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{name}: {content}"),
        None => content.to_string(),
    }
}

/// A provider's wire format: the type parameter of
/// [`HttpModel`](super::HttpModel). Sealed: the formats troupe speaks are
/// [`OpenAiChat`](crate::model::OpenAiChat),
/// [`OpenAiResponses`](crate::model::OpenAiResponses) and
/// [`AnthropicMessages`](crate::model::AnthropicMessages).
pub trait Dialect: Wire {}

impl<W: Wire> Dialect for W {}

/// The message of an error object: a string, or an object with `message`
/// (prefixed with its `type` or `code` when it has one), else the whole JSON.
pub fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message").and_then(Value::as_str) {
            Some(m) => match ["type", "code"]
                .iter()
                .filter_map(|k| o.get(*k).and_then(Value::as_str))
                .find(|kind| !kind.is_empty() && *kind != "error")
            {
                Some(kind) => format!("{kind}: {m}"),
                None => m.to_string(),
            },
            None => error.to_string(),
        },
        other => other.to_string(),
    }
}
