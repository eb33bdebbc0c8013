//! `plan:` of a workflow: a plan run by the planning crate — a text plan
//! (`A -> B, C`), action groups (`[[A], [B, C]]`) merged by a summarizer,
//! or a planner model that writes the plan at run time.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::replies::ReplySpec;

/// A planning workflow: exactly one of `text`, `groups` or `planner`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSectionSpec {
    /// A text plan: one path per line, `A -> B -> C`; `,` lists steps
    /// that run in parallel (`A -> B, C -> D`); a step alone on a line
    /// runs beside the others. Each id is a key of `steps` or an agent
    /// (or workflow) name.
    #[serde(default)]
    pub text: Option<String>,
    /// Action groups, run one group after another: `[[A], [B, C], [D]]`.
    /// The steps of a group of several run in parallel and the
    /// `summarizer` merges their results.
    #[serde(default)]
    pub groups: Option<Vec<Vec<String>>>,
    /// The agent that merges the results of a group of several (default:
    /// the results are collected as attachments, without a model).
    #[serde(default)]
    pub summarizer: Option<String>,
    /// A model writes the plan at run time, for the agents it is given.
    #[serde(default)]
    pub planner: Option<PlannerSpec>,
    /// The steps by id: the agent that runs each and what it is asked
    /// (an id that names an agent needs no entry).
    #[serde(default)]
    pub steps: BTreeMap<String, PlanStepSpec>,
    /// What a step receives of earlier steps (default `attachments`).
    #[serde(default)]
    pub passing: Option<PassingMode>,
    /// The results a step receives merged by a template into one message
    /// before its request (instead of `passing`).
    #[serde(default)]
    pub merge: Option<super::merge::MergeSpec>,
    /// Which earlier steps it receives (default: `predecessors` for a
    /// text plan, `all_earlier` for action groups).
    #[serde(default)]
    pub scope: Option<ScopeMode>,
    /// Stop flags: a step whose reply contains these words ends the plan
    /// early.
    #[serde(default)]
    pub flags: Option<PlanFlagsSpec>,
}

impl PlanSectionSpec {
    /// The forms given, of `text`, `groups` and `planner`.
    pub fn forms(&self) -> Vec<&'static str> {
        [
            ("text", self.text.is_some()),
            ("groups", self.groups.is_some()),
            ("planner", self.planner.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// One step of a plan: the agent that runs it and its request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStepSpec {
    /// The agent (or named workflow) that runs the step.
    pub agent: String,
    /// What the agent is asked (default: `Carry out step <id> of the
    /// task.`).
    #[serde(default)]
    pub request: Option<String>,
    /// How later steps see its result described (default: the request).
    #[serde(default)]
    pub description: Option<String>,
}

/// A planner: a model that writes the plan (its steps, their requests and
/// agents, the dependency graph) and the agents that may run its steps.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlannerSpec {
    /// The model that writes the plan (a name from `models`).
    pub model: String,
    /// The agents (or named workflows) that may run the plan's steps.
    pub agents: Vec<String>,
    /// Instructions for the planner (a default one explains the task).
    #[serde(default)]
    pub instructions: Option<String>,
    /// `text` (STEPS: and GRAPH: sections, the default) or `json`.
    #[serde(default)]
    pub format: Option<PlanFormatSpec>,
    /// Model calls allowed to get a plan that parses (default 3).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Scripted answers of the planner (when its model runs scripted).
    #[serde(default)]
    pub script: Option<Vec<ReplySpec>>,
}

/// How the planner writes its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanFormatSpec {
    /// `STEPS:` lines `ID [agent]: request`, then `GRAPH:` lines.
    Text,
    /// A JSON object `{"steps": [{"id", "request", "agent"}], "graph": […]}`.
    Json,
}

/// What a step receives of earlier steps (the seed's pass-down modes).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PassingMode {
    /// Nothing: only its request (`NoPassDown`).
    Nothing,
    /// Their results as attachments before its request (`ResultAsFirstArg`).
    Attachments,
    /// Their messages, as they were produced.
    Messages,
    /// Each result's text as a message of its own before its request
    /// (`ResultAsLeadingArgs`).
    LeadingArgs,
    /// The results' text under a named key (`{key: NAME}`): `{NAME}` in
    /// the step's request is replaced by it; a request without `{NAME}`
    /// is preceded by a message `NAME:` and the results.
    Key(String),
}

/// Which earlier steps a step receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeMode {
    /// The steps directly before it.
    Predecessors,
    /// Every step that ran before it.
    AllEarlier,
}

/// Stop flags: words in a step's reply that end the plan early.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanFlagsSpec {
    /// A reply containing this text ends the plan successfully: running
    /// steps finish, no further step starts, the run ends `stopped`.
    #[serde(default)]
    pub stop: Option<String>,
    /// A reply containing this text aborts the plan: the run fails.
    #[serde(default)]
    pub abort: Option<String>,
}
