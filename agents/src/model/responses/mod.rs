//! [`OpenAiResponsesClient`]: a [`ChatModel`](crate::model::ChatModel)
//! speaking the OpenAI Responses API (`POST {base}/responses`), used
//! statelessly: every request carries the whole conversation as `input`
//! items and asks `store: false`, so nothing is kept on the server and no
//! `previous_response_id` is needed.
//!
//! The HTTP side is shared with every provider (`model::http`); this module
//! holds the API's own: its [`Dialect`](super::Dialect) here, the request body in
//! `request`, a whole answer in `response`, a streamed one in `stream`.

use serde_json::Value;

use super::http::wire::{Wire, WireError};
use super::http::{HttpModel, HttpModelBuilder};
use super::openai::DEFAULT_BASE_URL;
use super::{ChatRequest, ChatResponse};

mod request;
mod response;
mod stream;

/// The OpenAI Responses wire format (`POST {base}/responses`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses;

impl Wire for OpenAiResponses {
    type Stream = stream::StreamState;
    const NAME: &'static str = "OpenAI Responses";
    const PROVIDER: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "responses";

    fn request_body(&self, model: &str, request: &ChatRequest, stream: bool) -> Value {
        request::body(model, request, stream)
    }

    fn parse_response(&self, _: &ChatRequest, text: &str) -> Result<ChatResponse, WireError> {
        response::parse(text)
    }

    fn stream_reader(&self, _: &ChatRequest) -> stream::StreamState {
        stream::StreamState::default()
    }
}

/// A client of the OpenAI Responses API, stateless.
///
/// System messages become `instructions`; tool calls and their results are
/// `function_call` and `function_call_output` items; structured output is
/// `text.format` with a JSON schema; usage is read from `input_tokens` and
/// `output_tokens`.
///
/// ```
/// use troupe_agents::model::OpenAiResponsesClient;
///
/// let client = OpenAiResponsesClient::builder("gpt-5-mini").api_key("sk-…").build()?;
/// assert_eq!(client.endpoint(), "https://api.openai.com/v1/responses");
/// # Ok::<(), troupe_agents::ModelError>(())
/// ```
pub type OpenAiResponsesClient = HttpModel<OpenAiResponses>;

/// Describes an [`OpenAiResponsesClient`].
pub type OpenAiResponsesClientBuilder = HttpModelBuilder<OpenAiResponses>;
