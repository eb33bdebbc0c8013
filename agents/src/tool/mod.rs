//! Tools a [`ChatAgent`](crate::ChatAgent) can call: the [`Tool`] trait and
//! what a call is given and gives back. Implementations: Rust functions
//! ([`FunctionTool`]), MCP servers ([`McpClient`]), agents and workflows
//! ([`AgentTool`]). Any of them may wait for the user's approval before
//! each call ([`NeedsApproval`]).

mod agent_tool;
mod approval;
pub(crate) mod arguments;
mod function;
mod mcp;
mod sampler;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_runtime::{RunContext, Thread};

use crate::error::ToolError;
use crate::model::ToolDefinition;

pub use agent_tool::{AgentTool, ThreadMode};
pub use approval::NeedsApproval;
pub(crate) use arguments::{invalid_arguments, parse_arguments};
pub use function::FunctionTool;
pub(crate) use function::schema_for;
/// Stdio MCP servers that never outlive the program that started them.
pub use mcp::reaper as mcp_reaper;
pub use mcp::{
    Authorize, Authorized, MEMORY_META_KEY, MINIMAL_ENV, McpCallResult, McpClient, McpOAuth,
    McpServerConfig, McpTool, McpToolInfo, McpTransport, kill_mcp_servers,
};
pub use sampler::Sampler;

/// What a tool call is given besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    /// The calling agent's name.
    pub agent: Arc<str>,
    /// The id of the call being answered.
    pub call_id: String,
    /// The caller's thread as the caller sees it now: the messages of its
    /// turn so far (the tool calls being answered included) follow the
    /// thread it was given.
    pub thread: Arc<Thread>,
    /// The caller's run context (events, cancellation, deadline).
    pub run: RunContext,
    /// The user's answers to the questions this call asked before
    /// ([`crate::ToolError::NeedsInput`]), oldest
    /// first: empty on the first try.
    pub answers: Vec<String>,
    /// The calling agent's model, for a tool that asks for completions of
    /// its own (an MCP server's sampling); `None` outside an agent.
    pub sampler: Option<Sampler>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("agent", &self.agent)
            .field("call_id", &self.call_id)
            .field("thread_len", &self.thread.len())
            .finish()
    }
}

impl ToolContext {
    /// A context for calling a tool outside any agent (tests, scripts): an
    /// empty thread and a fresh run context.
    pub fn detached(call_id: impl Into<String>) -> Self {
        ToolContext {
            agent: Arc::from(""),
            call_id: call_id.into(),
            thread: Arc::new(Thread::new()),
            run: RunContext::new(),
            answers: Vec::new(),
            sampler: None,
        }
    }
}

/// What a tool call gave back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// The result the model sees.
    pub content: String,
    /// A short note that stays in the agent's context after the raw result
    /// is trimmed away (an action's "memory").
    pub memory: Option<String>,
}

impl ToolOutput {
    /// A result of this text.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            memory: None,
        }
    }

    /// A result of this value as JSON text.
    pub fn json(value: &impl serde::Serialize) -> Result<Self, ToolError> {
        serde_json::to_string(value)
            .map(Self::text)
            .map_err(|e| ToolError::Failed(format!("cannot encode the result as JSON: {e}")))
    }

    /// Adds the memory kept when the raw result is trimmed.
    pub fn with_memory(mut self, memory: impl Into<String>) -> Self {
        self.memory = Some(memory.into());
        self
    }
}

impl From<String> for ToolOutput {
    fn from(s: String) -> Self {
        ToolOutput::text(s)
    }
}

impl From<&str> for ToolOutput {
    fn from(s: &str) -> Self {
        ToolOutput::text(s)
    }
}

/// A JSON string becomes its text; any other value its JSON.
impl From<serde_json::Value> for ToolOutput {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::String(s) => ToolOutput::text(s),
            other => ToolOutput::text(other.to_string()),
        }
    }
}

macro_rules! tool_output_from_display {
    ($($t:ty),*) => {$(
        impl From<$t> for ToolOutput {
            fn from(v: $t) -> Self {
                ToolOutput::text(v.to_string())
            }
        }
    )*};
}
tool_output_from_display!(bool, i32, i64, u32, u64, usize, f32, f64);

/// Something a model can call.
///
/// ```
/// use troupe_agents::{async_trait, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
///
/// struct Clock(ToolDefinition);
///
/// #[async_trait]
/// impl Tool for Clock {
///     fn definition(&self) -> &ToolDefinition { &self.0 }
///     async fn call(&self, _arguments: &str, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text("12:00"))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name, description and argument schema the model sees.
    fn definition(&self) -> &ToolDefinition;

    /// Runs one call. `arguments` is the model's JSON text, unchecked.
    /// An error goes back to the model as the call's result (unless it is
    /// [`ToolError::Fatal`]).
    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// Whether each call waits for the user's yes or no before it runs
    /// (false by default; [`NeedsApproval`] makes it true). A
    /// [`ChatAgent`](crate::ChatAgent) asks the caller
    /// `approve <tool>(<arguments>)? yes/no`: the turn ends with an input
    /// request, and the answer runs the call or tells the model it was
    /// denied.
    fn needs_approval(&self) -> bool {
        false
    }
}

#[async_trait]
impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn definition(&self) -> &ToolDefinition {
        (**self).definition()
    }
    fn needs_approval(&self) -> bool {
        (**self).needs_approval()
    }
    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        (**self).call(arguments, ctx).await
    }
}

/// The name of the built-in tool a [`ChatAgent`](crate::ChatAgent)'s model
/// calls to ask the user a question
/// ([`ChatAgentBuilder::ask_user`](crate::ChatAgentBuilder::ask_user)).
pub const ASK_USER: &str = "ask_user";

/// The name of the tool that hands off to `target`: `transfer_to_<target>`,
/// with characters a tool name may not hold replaced by `_`.
pub fn handoff_tool_name(target: &str) -> String {
    format!("transfer_to_{}", sanitize_tool_name(target))
}

/// `name` with every character a tool name may not hold replaced by `_`,
/// cut to 64 characters.
pub(crate) fn sanitize_tool_name(name: &str) -> String {
    // Most names (every agent's, on every message shown) are valid already.
    if is_valid_tool_name(name) {
        return name.to_owned();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// Whether providers accept `name` as a tool name (`^[A-Za-z0-9_-]{1,64}$`).
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert_eq!(
            handoff_tool_name("billing agent"),
            "transfer_to_billing_agent"
        );
        assert!(is_valid_tool_name("get_weather-2"));
        assert!(!is_valid_tool_name("get weather"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        // Valid names pass as they are; others are mended, and cut at 64.
        assert_eq!(sanitize_tool_name("writer-2_b"), "writer-2_b");
        assert_eq!(sanitize_tool_name("chef de cuisine"), "chef_de_cuisine");
        assert_eq!(sanitize_tool_name("équipe"), "_quipe");
        assert_eq!(sanitize_tool_name(&"y".repeat(70)), "y".repeat(64));
        assert_eq!(sanitize_tool_name(""), "");
    }

    #[test]
    fn outputs_from_values() {
        assert_eq!(
            ToolOutput::from(serde_json::json!("plain")).content,
            "plain"
        );
        assert_eq!(
            ToolOutput::from(serde_json::json!({"a": 1})).content,
            "{\"a\":1}"
        );
        assert_eq!(ToolOutput::from(42i64).content, "42");
        assert_eq!(
            ToolOutput::text("x").with_memory("m").memory.as_deref(),
            Some("m")
        );
    }
}
