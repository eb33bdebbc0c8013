//! `reasoner:` of a workflow: the reasoning agent of seeds 000 and 003 —
//! a loop of reasoner turns whose next actions (action groups or a
//! dependency graph) run as plans, parallel actions on branched copies.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::replies::ReplySpec;
use super::tools::ToolSpec;

/// A reasoning agent.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonerSpec {
    /// The agent (from `agents`) that answers each reasoner turn with the
    /// task status, an instant response and the next actions (JSON; the
    /// answer's rules and the actions are added to its instructions). Its
    /// instructions may use `{action_result}`, `{action_memory}`,
    /// `{conversation}`, `{current_state}`, `{previous_states}`,
    /// `{attachments}`.
    pub agent: String,
    /// The actions it may ask for: agents, named workflows, built-in tools
    /// (`word_count`, `calculator`, `current_time`) by name.
    #[serde(default)]
    pub actions: Vec<String>,
    /// More tools usable as actions (built-ins with options such as
    /// `memory:`, MCP servers, agents as tools), by their tool names.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The agent that merges a parallel group's results (default: they are
    /// collected as attachments, without a model).
    #[serde(default)]
    pub summarizer: Option<String>,
    /// Branched copies start with no task-status items or conversation of
    /// their own (`true`), or inherit them (`false`, the default); an
    /// action's `branch: fresh | inherit` decides for itself.
    #[serde(default)]
    pub branching_agent_start_as_new: Option<bool>,
    /// How deep copies may branch (default 2; at the limit a parallel
    /// group's actions run as plain actions).
    #[serde(default)]
    pub max_depth: Option<u32>,
    /// Reasoner turns allowed per copy (default 10, at least 1).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Scripted answers of the branched copies' reasoner turns, by branch
    /// path (`B`, `D/X`: the action ids down from the agent), when the
    /// model runs scripted; a copy without one uses the agent's.
    #[serde(default)]
    pub branch_scripts: BTreeMap<String, Vec<ReplySpec>>,
}
