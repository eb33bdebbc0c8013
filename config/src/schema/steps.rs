//! `steps:`: cagent-style steps — agents and workflows in order,
//! `parallel` blocks that nest, and `condition` steps whose branches may
//! go back to an earlier step.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Deserialize;

use super::conditions::ConditionSpec;
use super::merge::{CacheSpec, MergeSpec};
use super::retry::RetrySpec;
use crate::refs::ref_id;
use crate::shorthand::{ShortForm, Shorthand};

/// The kind of a step (inferred when absent: `agent`, `parallel` with
/// `steps`, `condition` with `condition`, `workflow` with `workflow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Runs an agent.
    Agent,
    /// Runs a named workflow.
    Workflow,
    /// Runs its `steps` concurrently and waits for all of them.
    Parallel,
    /// Chooses the `true` or `false` branch.
    Condition,
    /// Goes to another step (back: a loop, bounded by
    /// `max_loop_iterations`; or forward, skipping the steps between).
    Goto,
}

/// A branch of a condition step: the id of an earlier step to go back to
/// (a loop), or steps to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Branch {
    /// Go to this earlier step.
    Goto(String),
    /// Run these steps, then carry on after the condition.
    Steps(Vec<StepSpec>),
}

impl ShortForm for Branch {
    type Long = Vec<StepSpec>;
    const LONG_IS_LIST: bool = true;
    const NAME: &'static str = "Branch";
    const SHORT: &'static str = "The id of an earlier step to go back to (a loop).";
    const EXPECTING: &'static str = "the id of an earlier step, or a list of steps";
    fn from_short(text: &str) -> Self {
        Branch::Goto(text.to_string())
    }
    fn from_long(long: Vec<StepSpec>) -> Self {
        Branch::Steps(long)
    }
}

/// A branch as written: a step id, or a list of steps.
pub type BranchSpec = Shorthand<Branch>;

/// A step of a cagent-style workflow.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// The step's id (default: its agent's or workflow's name). Unique
    /// across the workflow; templates and `goto` refer to it.
    #[serde(default)]
    pub id: Option<String>,
    /// The kind of step (inferred when absent).
    #[serde(default, rename = "type")]
    pub kind: Option<StepKind>,
    /// The agent to run (`agent@node`: on another node of the cluster).
    #[serde(default)]
    pub agent: Option<String>,
    /// With `type: agent`, the agent to run (as cagent writes it);
    /// otherwise a label.
    #[serde(default)]
    pub name: Option<String>,
    /// The named workflow to run.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Parallel: the steps to run concurrently (they may nest).
    #[serde(default)]
    pub steps: Option<Vec<StepSpec>>,
    /// Condition: what to evaluate.
    #[serde(default)]
    pub condition: Option<ConditionSpec>,
    /// Condition: the branch taken when it holds.
    #[serde(default, rename = "true")]
    pub when_true: Option<BranchSpec>,
    /// Condition: the branch taken when it does not.
    #[serde(default, rename = "false")]
    pub when_false: Option<BranchSpec>,
    /// Retries of the step's failed turns.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// Parallel: its steps' results merged by a template into the one
    /// message the step after the block reads.
    #[serde(default)]
    pub merge: Option<MergeSpec>,
    /// Agent or workflow: its result cache (a result kept under its key
    /// is used instead of running the step).
    #[serde(default)]
    pub cache: Option<CacheSpec>,
    /// Goto: the id of the step to go to next (earlier: a loop, bounded
    /// by `max_loop_iterations`; later: the steps between are skipped).
    #[serde(default)]
    pub goto: Option<String>,
}

impl StepSpec {
    /// What the step is: its `type`, else inferred from what it has.
    pub fn step_kind(&self) -> Option<StepKind> {
        if let Some(k) = self.kind {
            return Some(k);
        }
        if self.agent.is_some() {
            Some(StepKind::Agent)
        } else if self.workflow.is_some() {
            Some(StepKind::Workflow)
        } else if self.steps.is_some() {
            Some(StepKind::Parallel)
        } else if self.condition.is_some() {
            Some(StepKind::Condition)
        } else if self.goto.is_some() {
            Some(StepKind::Goto)
        } else {
            None
        }
    }

    /// The agent (reference) or workflow the step runs.
    pub fn target(&self) -> Option<&str> {
        match self.step_kind()? {
            StepKind::Agent => self.agent.as_deref().or(self.name.as_deref()),
            StepKind::Workflow => self.workflow.as_deref(),
            _ => None,
        }
    }

    /// The step's id: given, or its agent's / workflow's name. Parallel
    /// blocks must be given one; condition steps have one only if given.
    pub fn step_id(&self) -> Option<String> {
        if let Some(id) = &self.id {
            return Some(id.clone());
        }
        match self.step_kind()? {
            StepKind::Agent | StepKind::Workflow => self.target().map(|t| ref_id(t).to_string()),
            StepKind::Parallel | StepKind::Condition | StepKind::Goto => None,
        }
    }

    /// The step lists nested in this one: a parallel block's steps and the
    /// branches that are lists of steps.
    pub fn children(&self) -> impl Iterator<Item = &[StepSpec]> {
        let branches = [&self.when_true, &self.when_false]
            .into_iter()
            .flatten()
            .filter_map(|b| match &b.0 {
                Branch::Steps(list) => Some(list.as_slice()),
                Branch::Goto(_) => None,
            });
        self.steps.as_deref().into_iter().chain(branches)
    }
}

/// Adds the id of every step in `steps`, nested ones included, to `ids`.
pub(crate) fn collect_step_ids(steps: &[StepSpec], ids: &mut BTreeSet<String>) {
    for s in steps {
        if let Some(id) = s.step_id() {
            ids.insert(id);
        }
        for list in s.children() {
            collect_step_ids(list, ids);
        }
    }
}

/// Lists `name → children` for every parallel block of a step list.
pub(crate) fn parallel_blocks(steps: &[StepSpec], out: &mut BTreeMap<String, Vec<String>>) {
    for s in steps {
        if s.step_kind() == Some(StepKind::Parallel)
            && let (Some(id), Some(children)) = (s.step_id(), &s.steps)
        {
            out.insert(id, children.iter().filter_map(StepSpec::step_id).collect());
        }
        for list in s.children() {
            parallel_blocks(list, out);
        }
    }
}
