//! [`AnthropicClient`]: a [`ChatModel`](crate::model::ChatModel) speaking
//! the Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! The HTTP side is shared with every provider (`model::http`); this module
//! holds the API's own: its [`Dialect`](super::Dialect) here, the request body in
//! `request`, a whole answer in `response`, a streamed one in `stream`.
//!
//! Structured output goes through a forced tool, the way Anthropic
//! documents it: a JSON-schema `response_format` becomes a tool named after
//! the schema whose `input_schema` is the schema, the model is made to call
//! it, and the call's input comes back as the answer's text.

use reqwest::header::HeaderName;
use serde_json::{Value, json};

use super::http::wire::{Wire, WireError};
use super::http::{HttpModel, HttpModelBuilder};
use super::{ChatRequest, ChatResponse, ResponseFormat};

mod request;
mod response;
mod stream;

/// Where requests go when no base URL is given (`/v1/messages` is added).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent as `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The answer cap sent when a request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages wire format, with its settings.
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    max_tokens: u32,
    version: String,
}

impl Default for AnthropicMessages {
    fn default() -> Self {
        AnthropicMessages {
            max_tokens: DEFAULT_MAX_TOKENS,
            version: ANTHROPIC_VERSION.to_string(),
        }
    }
}

/// The tool standing in for structured output: its name and input schema.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTool {
    name: String,
    schema: Value,
}

impl OutputTool {
    /// The output tool a request asks for, if it asks for JSON.
    fn of(request: &ChatRequest) -> Option<OutputTool> {
        match &request.response_format {
            None | Some(ResponseFormat::Text) => None,
            Some(ResponseFormat::JsonObject) => Some(OutputTool {
                name: "json_answer".into(),
                schema: json!({"type": "object"}),
            }),
            Some(ResponseFormat::JsonSchema { name, schema, .. }) => Some(OutputTool {
                name: name.clone(),
                schema: schema.clone(),
            }),
        }
    }
}

impl Wire for AnthropicMessages {
    type Stream = stream::StreamState;
    const NAME: &'static str = "Anthropic Messages";
    const PROVIDER: &'static str = "anthropic";
    const DEFAULT_BASE_URL: &'static str = ANTHROPIC_BASE_URL;
    const PATH: &'static str = "v1/messages";

    fn auth_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_string())
    }

    fn default_headers(&self) -> Vec<(HeaderName, String)> {
        vec![(
            HeaderName::from_static("anthropic-version"),
            self.version.clone(),
        )]
    }

    fn request_body(&self, model: &str, request: &ChatRequest, stream: bool) -> Value {
        request::body(model, request, stream, self.max_tokens)
    }

    fn parse_response(&self, request: &ChatRequest, text: &str) -> Result<ChatResponse, WireError> {
        response::parse(text, OutputTool::of(request).as_ref())
    }

    fn stream_reader(&self, request: &ChatRequest) -> stream::StreamState {
        stream::StreamState::new(OutputTool::of(request))
    }
}

/// A client of the Anthropic Messages API.
///
/// The key goes in `x-api-key`, `anthropic-version` is `2023-06-01`, system
/// messages become the top-level `system`, tool calls and results are
/// `tool_use` and `tool_result` blocks, and `max_tokens` (required by the
/// API) is the request's, else 4096.
///
/// ```
/// use troupe_agents::model::AnthropicClient;
///
/// let client = AnthropicClient::builder("claude-sonnet-4-5")
///     .api_key("sk-ant-…")
///     .max_tokens(8192)
///     .build()?;
/// assert_eq!(client.endpoint(), "https://api.anthropic.com/v1/messages");
/// # Ok::<(), troupe_agents::ModelError>(())
/// ```
pub type AnthropicClient = HttpModel<AnthropicMessages>;

/// Describes an [`AnthropicClient`].
pub type AnthropicClientBuilder = HttpModelBuilder<AnthropicMessages>;

impl HttpModelBuilder<AnthropicMessages> {
    /// Sets the answer cap sent when a request sets none (default 4096).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.dialect.max_tokens = max_tokens.max(1);
        self
    }

    /// Sets the `anthropic-version` header (default `2023-06-01`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.dialect.version = version.into();
        self
    }
}
