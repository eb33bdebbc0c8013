//! `agents:`: a model with instructions, tools and handoffs — or, with
//! `user:`, the caller taking part in the conversation, or, with `a2a:`,
//! a remote agent.

use schemars::JsonSchema;
use serde::Deserialize;

use super::a2a::A2aSpec;
use super::context::ContextSpec;
use super::replies::ReplySpec;
use super::tools::ToolSpec;
use crate::duration::HumanDuration;

/// A participant answered by the caller (AutoGen's `UserProxyAgent`):
/// its turn asks whoever runs the workflow — the run waits for input —
/// and the answer becomes its message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// The question shown each turn (default: the last message's text).
    #[serde(default)]
    pub prompt: Option<String>,
    /// The form the answer fills, as a JSON Schema of an object with
    /// primitive properties (MCP elicitation's `requestedSchema`: strings,
    /// numbers, integers, booleans, enums, with defaults): an MCP client
    /// calling the team is asked with it, and the filled form (JSON) is the
    /// answer. Default: one text field.
    #[serde(default)]
    pub form: Option<serde_json::Value>,
    /// Who answers when the team runs as an MCP tool: `person` (the
    /// default: the client asks its user, an elicitation), `client_model`
    /// (the client's model, through MCP sampling: the agent's turns are the
    /// caller's LLM) or `client_roots` (the client's roots, as JSON).
    /// Elsewhere a person answers.
    #[serde(default)]
    pub answered_by: Option<UserAnswerer>,
    /// With `answered_by: client_model`: the most tokens the client's model
    /// may answer with (default 1000).
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

/// Who answers a `user:` agent's turns when the team runs as an MCP tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserAnswerer {
    /// The client's user (elicitation).
    Person,
    /// The client's model (sampling).
    ClientModel,
    /// The client's roots (`roots/list`).
    ClientRoots,
}

/// An agent: a model with instructions, tools and handoffs. With `user:`
/// instead of a model, the caller answers its turns.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// What the agent does (selectors read it).
    #[serde(default)]
    pub description: Option<String>,
    /// System instructions; may use `{{ $steps.<id>.output }}` templates.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The model: a name from `models` (required unless `user` is given).
    #[serde(default)]
    pub model: Option<String>,
    /// The caller answers this agent's turns, instead of a model: each
    /// turn asks (`prompt`, or the last message) and the run waits for the
    /// answer, which becomes the agent's message. Takes only
    /// `description` besides.
    #[serde(default)]
    pub user: Option<UserSpec>,
    /// A remote agent answers this agent's turns over the Agent2Agent
    /// protocol, instead of a model. Takes only `description` besides.
    #[serde(default)]
    pub a2a: Option<A2aSpec>,
    /// Tools: built-in names (`ask_user` among them), a built-in name with
    /// options (`calculator: {approval: true}`), `mcp:` servers, and
    /// agents or named workflows (`agent: researcher`, `workflow: review`).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Agents (or `user`) this one may hand the conversation to.
    #[serde(default)]
    pub handoffs: Vec<String>,
    /// How much of its thread the agent shows its model: `{last: N}` or
    /// `{max_tokens: N}` (default: all of it).
    #[serde(default)]
    pub context: Option<ContextSpec>,
    /// Rounds of tool calls allowed in one turn (default 10).
    #[serde(default)]
    pub max_tool_iterations: Option<usize>,
    /// A JSON Schema the final answer must match (structured output).
    #[serde(default)]
    pub structured_output: Option<serde_json::Value>,
    /// Sampling temperature for this agent (overrides the model's).
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Completion-token cap for this agent (overrides the model's).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Time allowed for each tool call.
    #[serde(default)]
    pub tool_timeout: Option<HumanDuration>,
    /// Scripted replies of this agent (used when its model runs scripted).
    #[serde(default)]
    pub script: Option<Vec<ReplySpec>>,
    /// The cluster node that hosts this agent. `troupe node --name NODE`
    /// hosts the agents placed on it; a workflow run elsewhere (`troupe run
    /// --connect …`) sends this agent's turns to that node, under the same
    /// name. Absent: the agent runs in the process that runs the workflow.
    #[serde(default)]
    pub node: Option<String>,
}
