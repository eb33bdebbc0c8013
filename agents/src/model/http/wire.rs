//! What sets one provider's API apart from another's, for the shared HTTP
//! client ([`HttpModel`](super::HttpModel)): where requests go, how the key
//! is sent, the request body, and how answers and stream events are read.
//!
//! The trait is sealed: the wire formats troupe speaks are the marker types
//! of `model::openai`, `model::anthropic` and `model::responses`.

use reqwest::header::HeaderName;
use serde_json::Value;

use crate::model::sse::SseEvent;
use crate::model::{ChatDelta, ChatRequest, ChatResponse};

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
    /// The per-stream reading state.
    type Stream: Send + 'static;

    /// The API's name, for documentation and notes (`OpenAI chat completions`).
    const NAME: &'static str;
    /// The base URL used when none is given.
    const DEFAULT_BASE_URL: &'static str;
    /// The path appended to the base URL (`chat/completions`).
    const PATH: &'static str;

    /// The header carrying the API key, and its value.
    fn auth_header(&self, key: &str) -> (HeaderName, String);

    /// Headers every request carries (a header set on the builder with the
    /// same name replaces one of these).
    fn default_headers(&self) -> Vec<(HeaderName, String)> {
        Vec::new()
    }

    /// The JSON body asking `model` for `request`.
    fn request_body(&self, model: &str, request: &ChatRequest, stream: bool) -> Value;

    /// Reads a whole (non-streamed) answer to `request`.
    fn parse_response(&self, request: &ChatRequest, text: &str) -> Result<ChatResponse, WireError>;

    /// The state for reading a streamed answer to `request`.
    fn stream_state(&self, request: &ChatRequest) -> Self::Stream;

    /// Reads one stream event.
    fn parse_event(&self, state: &mut Self::Stream, event: &SseEvent) -> Result<Step, WireError>;
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
