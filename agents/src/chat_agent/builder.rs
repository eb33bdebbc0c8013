//! [`ChatAgentBuilder`]: describing a [`ChatAgent`] and checking that its
//! parts fit.
//!
//! Why its setters are written by hand rather than derived with `bon`
//! (which ractor already builds): most of them are not "set this field
//! once" — `tool`, `tools`, `handoff`, `handoffs` and `agent_tool` add to
//! lists, `model` and `tool` wrap a value in an `Arc` beside `model_arc`
//! and `tool_arc`, `structured_output_of::<T>()` derives a schema from a
//! type, `ask_user()` adds a tool — and the checks that matter (a model
//! given, tool names valid and unique, no handoff to itself, a usable
//! schema) span several fields, so they stay in [`ChatAgentBuilder::build`]
//! with their typed [`ChatAgentBuildError`]. A bon builder would also be a
//! type-state generic (`ChatAgentBuilder<S>`), a breaking change for code
//! that names the builder, and it would print every field in `Debug`,
//! where this one shows the model's name and the number of tools, not the
//! model (its key included) or each tool. The same holds
//! for the workspace's other builders (`WorkflowBuilder`, `GraphBuilder`,
//! `RouterBuilder`, `NodeBuilder`, the presets', `HttpModelBuilder`,
//! `A2aClientBuilder`): each adds to lists or checks at `build`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use troupe_runtime::Agent;

use super::{ChatAgent, HandoffTarget, OnLength, ToolMessages};
use crate::context_policy::ContextPolicy;
use crate::error::ChatAgentBuildError;
use crate::json_schema::SchemaError;
use crate::model::{ChatModel, Pricing, ToolDefinition};
use crate::structured::StructuredOutput;
use crate::tool::{AgentTool, ThreadMode, Tool, handoff_tool_name, is_valid_tool_name};

/// Describes a [`ChatAgent`]; [`build`](ChatAgentBuilder::build) checks it.
pub struct ChatAgentBuilder {
    name: String,
    description: String,
    instructions: Option<String>,
    model: Option<Arc<dyn ChatModel>>,
    tools: Vec<Arc<dyn Tool>>,
    handoffs: Vec<HandoffTarget>,
    max_tool_iterations: usize,
    structured: Option<Result<StructuredOutput, SchemaError>>,
    structured_retries: usize,
    context: ContextPolicy,
    tool_timeout: Option<Duration>,
    streaming: Option<bool>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    tool_messages: ToolMessages,
    ask_user: bool,
    pricing: Option<Pricing>,
    on_length: OnLength,
}

impl fmt::Debug for ChatAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatAgentBuilder")
            .field("name", &self.name)
            .field(
                "model",
                &self.model.as_ref().map(|m| m.model_name().to_string()),
            )
            .field("tools", &self.tools.len())
            .field("handoffs", &self.handoffs)
            .finish()
    }
}

impl ChatAgentBuilder {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        ChatAgentBuilder {
            name: name.into(),
            description: String::new(),
            instructions: None,
            model: None,
            tools: Vec::new(),
            handoffs: Vec::new(),
            max_tool_iterations: 10,
            structured: None,
            structured_retries: 1,
            context: ContextPolicy::default(),
            tool_timeout: None,
            streaming: None,
            temperature: None,
            max_tokens: None,
            tool_messages: ToolMessages::default(),
            ask_user: false,
            pricing: None,
            on_length: OnLength::default(),
        }
    }

    /// What the model's tokens cost: each model call's cost is recorded
    /// with its usage (see [`RunStats`](troupe_runtime::stats::RunStats)); without
    /// it calls are counted but not priced.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// What the agent does (for selectors, and its description as a tool).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the system instructions, shown to the model before the thread.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the model. Required: [`build`](Self::build) fails without one.
    pub fn model(mut self, model: impl ChatModel) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Sets a model already shared behind an `Arc` (one client for several
    /// agents), like [`model`](Self::model).
    pub fn model_arc(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds several tools (for example an MCP server's).
    pub fn tools<T: Tool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools
            .extend(tools.into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>));
        self
    }

    /// Adds an agent (or workflow) as a tool, on a fresh or the shared thread.
    pub fn agent_tool(self, agent: impl Agent, mode: ThreadMode) -> Self {
        self.tool(AgentTool::new(agent).with_mode(mode))
    }

    /// Gives the model the built-in `ask_user` tool
    /// ([`ASK_USER`](crate::tool::ASK_USER), `{"question": string}`): a call
    /// ends the turn with an input request whose prompt is the question,
    /// and the caller's answer becomes the call's result on the next turn
    /// (see [`ChatAgent`]).
    pub fn ask_user(mut self) -> Self {
        self.ask_user = true;
        self
    }

    /// Allows handing off to `target`: the model gets a
    /// `transfer_to_<target>` tool.
    pub fn handoff(self, target: impl Into<String>) -> Self {
        self.handoff_described(target, "")
    }

    /// Allows handing off to `target`, telling the model what it does.
    pub fn handoff_described(
        mut self,
        target: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.handoffs.push(HandoffTarget {
            name: target.into(),
            description: description.into(),
        });
        self
    }

    /// Allows handing off to each of `targets`.
    pub fn handoffs<S: Into<String>>(self, targets: impl IntoIterator<Item = S>) -> Self {
        targets.into_iter().fold(self, |b, t| b.handoff(t))
    }

    /// How many rounds of tool calls one turn may take (default 10). The
    /// last model call of a turn is told to answer without tools; if it
    /// still asks for them, the turn fails with a clear error.
    pub fn max_tool_iterations(mut self, n: usize) -> Self {
        self.max_tool_iterations = n;
        self
    }

    /// Requires the final answer to be JSON matching `schema`.
    pub fn structured_output(mut self, schema: serde_json::Value) -> Self {
        self.structured = Some(StructuredOutput::new(schema));
        self
    }

    /// Requires the final answer to be a JSON `T` (schema derived).
    pub fn structured_output_of<T: JsonSchema>(mut self) -> Self {
        self.structured = Some(StructuredOutput::of::<T>());
        self
    }

    /// How many times a non-matching structured answer is sent back to the
    /// model with what is wrong (default 1) before the turn fails.
    pub fn structured_retries(mut self, n: usize) -> Self {
        self.structured_retries = n;
        self
    }

    /// How much of the thread the model sees (default: the newest
    /// messages that fit in the model's context window,
    /// [`ContextPolicy::ModelWindow`]).
    pub fn context(mut self, policy: ContextPolicy) -> Self {
        self.context = policy;
        self
    }

    /// Time allowed for each tool call; a call that takes longer gives the
    /// model a timeout error. No limit by default.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Whether to call the model in streaming mode. Streamed, each piece
    /// of the answer is an event as it arrives ([`Event::TextDelta`],
    /// [`Event::ToolArgumentsDelta`]); the answer is the same either way.
    /// Not set, a turn streams when somebody listens to its events
    /// ([`RunContext::events_enabled`]).
    ///
    /// [`Event::TextDelta`]: troupe_runtime::Event::TextDelta
    /// [`Event::ToolArgumentsDelta`]: troupe_runtime::Event::ToolArgumentsDelta
    /// [`RunContext::events_enabled`]: troupe_runtime::RunContext::events_enabled
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = Some(streaming);
        self
    }

    /// Sets the sampling temperature of every model call.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the completion tokens of each model call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// What to do with an answer cut off at the token limit
    /// (`finish_reason: length`): fail, naming the model and the cap (the
    /// default), or ask the model to go on ([`OnLength`]).
    pub fn on_length(mut self, on_length: OnLength) -> Self {
        self.on_length = on_length;
        self
    }

    /// Where the turn's tool calls and results go (default: the agent's
    /// own thread only).
    pub fn tool_messages(mut self, policy: ToolMessages) -> Self {
        self.tool_messages = policy;
        self
    }

    /// Checks the description and builds the agent.
    pub fn build(self) -> Result<ChatAgent, ChatAgentBuildError> {
        let agent = self.name.clone();
        let model = self
            .model
            .ok_or_else(|| ChatAgentBuildError::MissingModel(agent.clone()))?;
        let structured =
            self.structured
                .transpose()
                .map_err(|source| ChatAgentBuildError::InvalidSchema {
                    agent: agent.clone(),
                    source,
                })?;

        let mut definitions: Vec<ToolDefinition> = Vec::new();
        let mut tool_index = HashMap::new();
        let mut handoff_index = HashMap::new();
        let mut claim = |definition: ToolDefinition| -> Result<(), ChatAgentBuildError> {
            if !is_valid_tool_name(&definition.name) {
                return Err(ChatAgentBuildError::InvalidToolName {
                    agent: agent.clone(),
                    name: definition.name,
                });
            }
            if definitions.iter().any(|d| d.name == definition.name) {
                return Err(ChatAgentBuildError::DuplicateTool {
                    agent: agent.clone(),
                    name: definition.name,
                });
            }
            definitions.push(definition);
            Ok(())
        };
        for (i, tool) in self.tools.iter().enumerate() {
            let definition = tool.definition().clone();
            tool_index.insert(definition.name.clone(), i);
            claim(definition)?;
        }
        if self.ask_user {
            claim(super::human::ask_user_definition())?;
        }
        for (i, target) in self.handoffs.iter().enumerate() {
            if target.name == agent {
                return Err(ChatAgentBuildError::HandoffToSelf(agent.clone()));
            }
            let definition = target.definition();
            handoff_index.insert(definition.name.clone(), i);
            claim(definition)?;
        }

        Ok(ChatAgent {
            name: Arc::from(self.name.as_str()),
            description: self.description,
            instructions: self.instructions,
            model,
            tools: self.tools,
            tool_index,
            handoffs: self.handoffs,
            handoff_index,
            definitions,
            max_tool_iterations: self.max_tool_iterations,
            structured,
            structured_retries: self.structured_retries,
            context: self.context,
            tool_timeout: self.tool_timeout,
            streaming: self.streaming,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            tool_messages: self.tool_messages,
            ask_user: self.ask_user,
            pricing: self.pricing,
            on_length: self.on_length,
        })
    }
}

impl HandoffTarget {
    /// The `transfer_to_<name>` tool the model sees.
    pub(crate) fn definition(&self) -> ToolDefinition {
        let mut description = format!("Hand the conversation over to '{}'.", self.name);
        if !self.description.is_empty() {
            description.push(' ');
            description.push_str(&self.description);
        }
        ToolDefinition {
            name: handoff_tool_name(&self.name),
            description,
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "description": "Why, and what the next agent needs to know."
                    }
                },
                "additionalProperties": false
            }),
        }
    }
}
