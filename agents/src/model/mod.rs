//! Chat models: the [`ChatModel`] trait and the request, response and
//! stream deltas it speaks, independent of any provider's wire format; and
//! the clients of each provider's API ([`OpenAiClient`],
//! [`OpenAiResponsesClient`], [`AnthropicClient`]), one [`HttpModel`] each.

mod anthropic;
mod cassette;
mod fallback;
pub(crate) mod http;
mod observer;
mod openai;
mod openai_wire;
mod priced;
mod pricing;
mod rate_limit;
mod responses;
pub(crate) mod retry;
mod scripted;
mod scripted_reply;
pub mod sse;
mod stream;

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};
use troupe_runtime::{message::ToolCall, message::Usage};

use crate::error::ModelError;

pub use anthropic::{
    ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicClient, AnthropicClientBuilder,
    AnthropicMessages, DEFAULT_MAX_TOKENS,
};
pub use cassette::{
    A2A_FILE, AgentEntry, CALLS_FILE, Cassette, CassetteError, Entry as CassetteEntry, MCP_FILE,
    McpServerEntry, McpToolEntry, ReplayMode, ReplayedTool, TOOLS_FILE, ToolEntry,
};
pub use fallback::{Cooldowns, DEFAULT_COOLDOWN, FallbackModel};
pub use http::{Dialect, HttpModel, HttpModelBuilder};
pub use observer::{CallObserver, NoObserver};
pub use openai::{DEFAULT_BASE_URL, OpenAiChat, OpenAiClient, OpenAiClientBuilder};
pub use priced::PricedModel;
pub use pricing::Pricing;
pub use rate_limit::{LocalRateLimiter, Permit, RateLimit, RateLimiter, shared_limiter};
pub use responses::{OpenAiResponses, OpenAiResponsesClient, OpenAiResponsesClientBuilder};
pub use retry::{ModelRetryPolicy, RetryOn};
pub use scripted::{ScriptPosition, ScriptedModel, WhenExhausted};
pub use scripted_reply::ScriptedReply;
pub use stream::{StreamAccumulator, collect_stream, response_deltas};

/// One message of a model conversation, in the roles chat models know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatMessage {
    /// Instructions for the model.
    System {
        /// The instructions.
        content: String,
    },
    /// A turn of the user (or of another agent, named).
    User {
        /// What was said.
        content: String,
        /// Who said it, when it was not the user.
        name: Option<String>,
    },
    /// A turn of the model: text, tool calls, or both.
    Assistant {
        /// The text, if any.
        content: Option<String>,
        /// The tool calls, if any.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call answered.
        call_id: String,
        /// The result (or error) text.
        content: String,
    },
}

impl ChatMessage {
    /// System instructions.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::System {
            content: content.into(),
        }
    }

    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: content.into(),
            name: None,
        }
    }

    /// An assistant text turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// A tool result.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage::Tool {
            call_id: call_id.into(),
            content: content.into(),
        }
    }

    /// The text of the message (tool calls not included).
    pub fn text(&self) -> &str {
        match self {
            ChatMessage::System { content }
            | ChatMessage::User { content, .. }
            | ChatMessage::Tool { content, .. } => content,
            ChatMessage::Assistant { content, .. } => content.as_deref().unwrap_or(""),
        }
    }
}

/// A tool as the model sees it: a name, what it does, and a JSON schema of
/// its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does (the model reads this to decide when to call it).
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Whether (and which) tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls: answer in text.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Tool(String),
}

/// The shape the model's text must take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ResponseFormat {
    /// Free text.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// A name for the schema (letters, digits, `_`, `-`).
        name: String,
        /// The schema.
        schema: serde_json::Value,
        /// Whether the provider should enforce it strictly.
        strict: bool,
    },
}

/// What a model is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Whether it may call them (provider default when `None`).
    pub tool_choice: Option<ToolChoice>,
    /// The shape of the answer (free text when `None`).
    pub response_format: Option<ResponseFormat>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Cap on completion tokens.
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request over these messages, with no tools.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        ChatRequest {
            messages,
            tools: Vec::new(),
            tool_choice: None,
            response_format: None,
            temperature: None,
            max_tokens: None,
        }
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the response format.
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It hit the token limit.
    Length,
    /// It asked for tool calls.
    ToolCalls,
    /// The provider filtered the content.
    ContentFilter,
    /// Something else the provider named.
    Other(String),
    /// The provider did not say (missing or empty `finish_reason`).
    Unspecified,
}

impl FinishReason {
    /// Reads a provider's `finish_reason`, leniently: missing or empty is
    /// [`FinishReason::Unspecified`], legacy `function_call` is tool calls.
    pub fn from_wire(reason: Option<&str>) -> Self {
        match reason.map(str::trim) {
            None | Some("") => FinishReason::Unspecified,
            Some("stop") | Some("end_turn") | Some("eos") => FinishReason::Stop,
            Some("length") | Some("max_tokens") => FinishReason::Length,
            Some("tool_calls") | Some("function_call") | Some("tool_use") => {
                FinishReason::ToolCalls
            }
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_string()),
        }
    }
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text, if any.
    pub content: Option<String>,
    /// The tool calls, in the order given.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Tokens used, if the provider said.
    pub usage: Option<Usage>,
    /// The model that answered, if the provider said.
    pub model: Option<String>,
}

impl ChatResponse {
    /// A text answer.
    pub fn text(content: impl Into<String>) -> Self {
        ChatResponse {
            content: Some(content.into()),
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            usage: None,
            model: None,
        }
    }

    /// The text, or "" when there is none.
    pub fn text_content(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }
}

/// A piece of a streamed tool call. Providers split a call over several
/// chunks: the first usually carries the id and name, later ones pieces of
/// the arguments; `index` says which call a piece belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Which call of the response this piece belongs to (some servers omit it).
    pub index: Option<usize>,
    /// The call's id, when this piece carries it.
    pub id: Option<String>,
    /// The tool's name, when this piece carries it.
    pub name: Option<String>,
    /// A piece of the arguments' JSON text.
    pub arguments: String,
}

/// One item of a streamed response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ChatDelta {
    /// A chunk of text.
    Text(String),
    /// A piece of a tool call.
    ToolCall(ToolCallDelta),
    /// Why the model stopped.
    Finish(FinishReason),
    /// Tokens used (usually in the last chunk).
    Usage(Usage),
    /// The model that answered, as the server names it (its
    /// `gen_ai.response.model`).
    Model(String),
}

/// A streamed response: deltas as they arrive, ending after the last one
/// (or with an error).
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatDelta, ModelError>> + Send>>;

/// A chat-completion model.
///
/// `complete` answers a whole request; `stream` answers it as deltas (by
/// default, from `complete` in one go, so every model can be streamed).
/// Fold a stream back into a response with [`collect_stream`].
#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// The model's name (for logs and events).
    fn model_name(&self) -> &str;

    /// Who serves the model, as the `gen_ai.provider.name` of its spans
    /// names it (`openai` for OpenAI-compatible servers); by default
    /// `unknown`.
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// How many tokens the model takes in one request (prompt and answer
    /// together), if known. A [`ChatAgent`](crate::ChatAgent) with the
    /// default [`ContextPolicy`](crate::ContextPolicy) shows the model no
    /// more of its thread than fits; unknown, it assumes
    /// [`DEFAULT_CONTEXT_WINDOW`](crate::DEFAULT_CONTEXT_WINDOW).
    fn context_window(&self) -> Option<usize> {
        None
    }

    /// What the model's tokens cost, if it is priced ([`PricedModel`]);
    /// by default unpriced. A fallback chain answers with its first
    /// model's, and tells a call's observer whose prices apply when
    /// another model takes over ([`CallObserver::failover`]).
    fn pricing(&self) -> Option<Pricing> {
        None
    }

    /// Answers the request.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError>;

    /// Answers the request as a stream of deltas.
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        let response = self.complete(request).await?;
        Ok(Box::pin(futures::stream::iter(
            response_deltas(&response).into_iter().map(Ok),
        )))
    }

    /// [`complete`](Self::complete), telling `observer` about each attempt
    /// and retry. By default the call is one attempt; a model that retries
    /// on its own (as [`OpenAiClient`] does) says so.
    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        observer.attempt_started(1);
        self.complete(request).await
    }

    /// [`stream`](Self::stream), telling `observer` about each attempt and
    /// retry (of opening the stream).
    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        observer.attempt_started(1);
        self.stream(request).await
    }
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn model_name(&self) -> &str {
        (**self).model_name()
    }
    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }
    fn context_window(&self) -> Option<usize> {
        (**self).context_window()
    }
    fn pricing(&self) -> Option<Pricing> {
        (**self).pricing()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        (**self).complete(request).await
    }
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        (**self).stream(request).await
    }
    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        (**self).complete_observed(request, observer).await
    }
    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        (**self).stream_observed(request, observer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_read_leniently() {
        assert_eq!(FinishReason::from_wire(None), FinishReason::Unspecified);
        assert_eq!(FinishReason::from_wire(Some("")), FinishReason::Unspecified);
        assert_eq!(FinishReason::from_wire(Some("stop")), FinishReason::Stop);
        assert_eq!(
            FinishReason::from_wire(Some("function_call")),
            FinishReason::ToolCalls
        );
        assert_eq!(
            FinishReason::from_wire(Some("weird")),
            FinishReason::Other("weird".into())
        );
    }
}
