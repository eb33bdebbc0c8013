//! # troupe-agents
//!
//! The agents of troupe: chat models, tools, and the [`ChatAgent`] that
//! puts them together.
//!
//! - [`model`]: the [`ChatModel`] trait (a completion over messages and tool
//!   definitions, whole or streamed), clients of the providers' APIs — an
//!   [`OpenAiClient`] for any OpenAI-compatible server, an
//!   [`OpenAiResponsesClient`] and an [`AnthropicClient`] — and a
//!   deterministic [`ScriptedModel`] for offline examples and tests.
//! - [`tool`]: the [`Tool`] trait; Rust functions as tools
//!   ([`FunctionTool`]), MCP servers' tools ([`McpClient`]), agents and
//!   workflows as tools ([`AgentTool`]).
//! - [`ChatAgent`]: instructions, a model, tools, handoffs, structured
//!   output and a [`ContextPolicy`]; its turn is the tool-result feedback
//!   loop.
//! - [`UserProxy`]: an agent whose answer comes from the caller.
//! - [`a2a`]: a remote agent spoken to over the Agent2Agent protocol
//!   ([`A2aAgent`](a2a::A2aAgent)), and the protocol's types.
//!
//! Every agent here implements [`troupe_runtime::Agent`], so it can run
//! alone or as a participant of a workflow.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use serde::Deserialize;
//! use serde_json::json;
//! use troupe_agents::{schemars::JsonSchema, ChatAgent, FunctionTool, ScriptedModel, ScriptedReply};
//! use troupe_runtime::{Agent, Content, Message, RunContext, Thread};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Weather {
//!     /// The city to look up.
//!     city: String,
//! }
//!
//! let weather = FunctionTool::new("weather", "Today's weather in a city.", |w: Weather| async move {
//!     Ok::<_, String>(format!("sunny in {}", w.city))
//! });
//!
//! // Offline: the model's answers are scripted (swap in an OpenAiClient for real).
//! let model = ScriptedModel::new([
//!     ScriptedReply::tool_call("weather", json!({"city": "Oslo"})),
//!     ScriptedReply::text("It is sunny in Oslo."),
//! ]);
//! let agent = ChatAgent::builder("assistant")
//!     .instructions("Answer with the tools you have.")
//!     .model(model)
//!     .tool(weather)
//!     .build()?;
//!
//! let thread = Arc::new(Thread::from_messages([Message::user("Weather in Oslo?")]));
//! let reply = agent.run(thread, RunContext::new()).await?;
//! // The reply is the answer; the tool call and its result are private:
//! // they go to the agent's own thread only (the one a workflow keeps for it).
//! assert_eq!(reply.messages().len(), 1);
//! assert_eq!(reply.messages()[0].text_content(), "It is sunny in Oslo.");
//! assert!(matches!(&reply.private()[1].content, Content::ToolResults(r) if r[0].content == "sunny in Oslo"));
//! # Ok(()) }
//! ```

pub mod a2a;
mod chat_agent;
mod context_policy;
mod conversation;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod json_schema;
mod metered;
pub mod model;
pub mod placeholders;
pub mod prelude;
mod structured;
mod telemetry;
mod tls;
pub mod tool;
mod user_proxy;

pub use async_trait::async_trait;
/// The schema derive used by [`FunctionTool`] and structured output.
pub use schemars;
pub use troupe_runtime::FnAgent;

pub use chat_agent::{
    CONTINUE_PROMPT, ChatAgent, ChatAgentBuilder, HandoffTarget, OnLength, ToolMessages,
};
pub use context_policy::{ContextPolicy, DEFAULT_CONTEXT_WINDOW};
pub use error::{ChatAgentBuildError, McpError, ModelError, NotWaiting, ToolError};
pub use json_schema::{SchemaError, SchemaErrors, SchemaValidator};
pub use metered::complete_metered;
pub use model::{
    AnthropicClient, ChatDelta, ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatStream,
    FinishReason, ModelRetryPolicy, OpenAiClient, OpenAiResponsesClient, Pricing, ResponseFormat,
    ScriptedModel, ScriptedReply, ToolChoice, ToolDefinition,
};
pub use structured::{AnswerRejected, StructuredOutput};
pub use tool::{
    ASK_USER, AgentTool, Authorize, Authorized, FunctionTool, MINIMAL_ENV, McpCallResult,
    McpClient, McpOAuth, McpServerConfig, McpTool, McpToolInfo, McpTransport, NeedsApproval,
    Sampler, ThreadMode, Tool, ToolContext, ToolOutput, kill_mcp_servers,
};
pub use user_proxy::{UserProxy, UserProxyHandle, UserRequest};

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
