//! [`OpenAiClient`]: a [`ChatModel`](crate::model::ChatModel) speaking the
//! OpenAI chat-completions API — OpenAI itself, Azure OpenAI, and the many
//! servers compatible with it (Ollama, vLLM, llama.cpp, LM Studio, proxies).
//!
//! The HTTP side (builder, retries, timeouts, error masking) is shared by
//! every provider (`model::http`); this file holds what is the
//! chat-completions API's own: its [`Dialect`](super::Dialect) (the wire format is in
//! `openai_wire`) and configuration from `OPENAI_*` variables.

use serde_json::Value;

use super::http::wire::{EventReader, Step, Wire, WireError};
use super::http::{HttpModel, HttpModelBuilder};
use super::sse::SseEvent;
use super::{ChatRequest, ChatResponse, openai_wire};
use crate::error::ModelError;

/// Where requests go when no base URL is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The OpenAI chat-completions wire format (`POST {base}/chat/completions`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiChat;

impl Wire for OpenAiChat {
    type Stream = ChunkReader;
    const NAME: &'static str = "OpenAI chat completions";
    const PROVIDER: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "chat/completions";

    fn request_body(&self, model: &str, request: &ChatRequest, stream: bool) -> Value {
        openai_wire::request_body(model, request, stream)
    }

    fn parse_response(&self, _: &ChatRequest, text: &str) -> Result<ChatResponse, WireError> {
        openai_wire::parse_response(text)
    }

    fn stream_reader(&self, _: &ChatRequest) -> ChunkReader {
        ChunkReader
    }
}

/// Reads streamed chat-completion chunks, up to `data: [DONE]`.
#[derive(Debug)]
pub struct ChunkReader;

impl EventReader for ChunkReader {
    fn event(&mut self, event: &SseEvent) -> Result<Step, WireError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Step::last(Vec::new()));
        }
        openai_wire::parse_chunk(data).map(Step::more)
    }
}

/// A client of an OpenAI-compatible `POST {base_url}/chat/completions`.
///
/// Streams ask for usage with `stream_options.include_usage`; responses
/// are read leniently (see the wire module), and a server that ignores
/// `stream: true` and answers with plain JSON is read as a whole.
///
/// ```no_run
/// # async fn demo() -> Result<(), troupe_agents::ModelError> {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, OpenAiClient};
///
/// // OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY, OPENAI_MODEL
/// let client = OpenAiClient::from_env()?;
/// let answer = client.complete(&ChatRequest::new(vec![ChatMessage::user("Say hi")])).await?;
/// println!("{}", answer.text_content());
/// # Ok(()) }
/// ```
pub type OpenAiClient = HttpModel<OpenAiChat>;

/// Describes an [`OpenAiClient`].
pub type OpenAiClientBuilder = HttpModelBuilder<OpenAiChat>;

impl HttpModel<OpenAiChat> {
    /// A builder configured from the environment: `OPENAI_BASE_URL`
    /// (default [`DEFAULT_BASE_URL`]), `OPENAI_API_KEY`, and the model from
    /// `OPENAI_MODEL`, else `model`.
    pub fn builder_from_env(model: impl Into<String>) -> OpenAiClientBuilder {
        let model = env("OPENAI_MODEL").unwrap_or_else(|| model.into());
        let mut builder = Self::builder(model);
        if let Some(url) = env("OPENAI_BASE_URL") {
            builder = builder.base_url(url);
        }
        if let Some(key) = env("OPENAI_API_KEY") {
            builder = builder.api_key(key);
        }
        builder
    }

    /// A client configured from the environment; the model comes from
    /// `OPENAI_MODEL`, which must be set. Against OpenAI itself (no
    /// `OPENAI_BASE_URL`), `OPENAI_API_KEY` must be set too; local servers
    /// usually need no key.
    pub fn from_env() -> Result<Self, ModelError> {
        if env("OPENAI_MODEL").is_none() {
            return Err(ModelError::Config(
                "OPENAI_MODEL is not set (or use OpenAiClient::from_env_with_model)".into(),
            ));
        }
        Self::from_env_with_model("")
    }

    /// A client configured from the environment, using `model` unless
    /// `OPENAI_MODEL` names another.
    pub fn from_env_with_model(model: impl Into<String>) -> Result<Self, ModelError> {
        let builder = Self::builder_from_env(model);
        if !builder.has_api_key() && builder.base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(ModelError::Config(format!(
                "OPENAI_API_KEY is not set (required for {DEFAULT_BASE_URL}; set OPENAI_BASE_URL for a local server)"
            )));
        }
        builder.build()
    }
}

/// A variable's value, unless unset or blank.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
