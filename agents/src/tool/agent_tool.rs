//! [`AgentTool`]: an agent — or a workflow, which is an agent — called as a
//! tool.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use troupe_runtime::{Agent, Content, Message, Thread};

use super::{
    Tool, ToolContext, ToolOutput, invalid_arguments, parse_arguments, sanitize_tool_name,
};
use crate::error::ToolError;
use crate::model::ToolDefinition;

/// What thread the called agent works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThreadMode {
    /// Only the request, as a user message: the callee knows nothing else
    /// (an isolated branch that starts fresh).
    #[default]
    Fresh,
    /// The caller's thread (as the caller sees it during its turn) and then
    /// the request as a user message: the callee sees the whole conversation.
    Shared,
}

#[derive(Deserialize)]
struct Request {
    request: String,
}

/// An agent (or workflow) as a tool: the model writes a request, the agent
/// takes a turn on it, and its final message is the tool's result.
///
/// The request reaches the callee as a *user* message (so a workflow's
/// routes from `user` take it in), on a fresh thread or after the caller's
/// messages ([`ThreadMode`]). The callee's intermediate messages and its
/// returned thread are not kept: the caller's thread only gains the tool
/// call and its result. A failing callee gives the model an error result.
///
/// ```
/// use troupe_agents::{AgentTool, ThreadMode};
/// use troupe_runtime::FnAgent;
///
/// let critic = FnAgent::sync("critic", |t| Ok(format!("{} messages seen", t.len())))
///     .with_description("Reviews the conversation so far.");
/// let tool = AgentTool::new(critic).shared_thread();
/// assert_eq!(tool.mode(), ThreadMode::Shared);
/// ```
pub struct AgentTool {
    agent: Arc<dyn Agent>,
    mode: ThreadMode,
    definition: ToolDefinition,
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("agent", &self.agent.name())
            .field("tool", &self.definition.name)
            .field("mode", &self.mode)
            .finish()
    }
}

impl AgentTool {
    /// `agent` as a tool of the same name (characters a tool name may not
    /// hold become `_`), described by the agent's description, on a fresh
    /// thread.
    pub fn new(agent: impl Agent) -> Self {
        Self::from_arc(Arc::new(agent))
    }

    /// A shared agent as a tool.
    pub fn from_arc(agent: Arc<dyn Agent>) -> Self {
        let description = if agent.description().is_empty() {
            format!("Ask the agent '{}' to do something.", agent.name())
        } else {
            agent.description().to_string()
        };
        let definition = ToolDefinition {
            name: sanitize_tool_name(agent.name()),
            description,
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "request": {
                        "type": "string",
                        "description": "What to ask, with everything the agent needs to know."
                    }
                },
                "required": ["request"],
                "additionalProperties": false
            }),
        };
        AgentTool {
            agent,
            mode: ThreadMode::Fresh,
            definition,
        }
    }

    /// The callee shares the caller's thread.
    pub fn shared_thread(mut self) -> Self {
        self.mode = ThreadMode::Shared;
        self
    }

    /// The callee starts from the request alone (the default).
    pub fn fresh_thread(mut self) -> Self {
        self.mode = ThreadMode::Fresh;
        self
    }

    /// Sets the thread mode.
    pub fn with_mode(mut self, mode: ThreadMode) -> Self {
        self.mode = mode;
        self
    }

    /// Renames the tool (the agent keeps its name).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.definition.name = name.into();
        self
    }

    /// Sets the description the model sees.
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.definition.description = description.into();
        self
    }

    /// The thread mode.
    pub fn mode(&self) -> ThreadMode {
        self.mode
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let value = parse_arguments(&self.definition.name, arguments)?;
        let Request { request } = serde_json::from_value(value)
            .map_err(|e| invalid_arguments(&self.definition.name, &e))?;
        // Messages only: the caller's child threads and workflow state (if
        // any) are not the callee's.
        let mut thread = Thread::new();
        if self.mode == ThreadMode::Shared {
            thread.extend_shared(ctx.thread.messages().iter().cloned());
        }
        thread.push(Message::user(request));
        // A turn in its own `invoke_agent` span, under the call's.
        let turn = troupe_runtime::telemetry::agent_turn(
            self.agent.clone(),
            Arc::new(thread),
            ctx.run.child(self.agent.name()),
        );
        let reply = turn
            .await
            .map_err(|e| ToolError::Failed(format!("agent '{}' failed: {e}", self.agent.name())))?;
        if let Some(question) = reply.request() {
            // A call has no way to wait for the caller's answer.
            return Err(ToolError::Failed(format!(
                "agent '{}' wants to ask the user ({question}), which an agent called as a tool cannot do",
                self.agent.name()
            )));
        }
        let text = match reply.messages().last().map(|m| &m.content) {
            None => "(the agent gave no answer)".to_string(),
            Some(Content::Handoff(h)) => format!("(handed off to {}) {}", h.target, h.reason),
            Some(content) => content.text().into_owned(),
        };
        Ok(ToolOutput::text(text))
    }
}
