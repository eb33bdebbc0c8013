//! The names most programs with model-backed agents use, for a glob
//! import beside the runtime's:
//!
//! ```
//! use troupe_agents::prelude::*;
//!
//! let model = ScriptedModel::new(vec![ScriptedReply::text("hello")]);
//! let agent = ChatAgent::builder("greeter").model(model).build();
//! assert!(agent.is_ok());
//! ```
//!
//! Everything else stays where it is (the crate root, or its module such
//! as [`model`](crate::model), [`tool`](crate::tool) or [`a2a`](crate::a2a)).

pub use crate::{
    AgentTool, AnthropicClient, ChatAgent, ChatModel, FunctionTool, McpClient, ModelError,
    ModelRetryPolicy, OpenAiClient, OpenAiResponsesClient, ScriptedModel, ScriptedReply, Tool,
    ToolContext, ToolError, ToolOutput,
};
