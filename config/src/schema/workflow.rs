//! `workflow:` and `workflows:`: one kind of team, plus threads and a stop
//! condition.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::ceiling::{TurnLimit, default_turn_ceiling};
use super::graph::GraphSpec;
use super::magentic::MagenticSpec;
use super::plan::PlanSectionSpec;
use super::reasoner::ReasonerSpec;
use super::router::{Names, RouterSpec};
use super::steps::StepSpec;
use super::stop::StopSpec;
use super::teams::{MapReduceSpec, SelectorSpec, SequentialSpec, TeamSpec};

/// A workflow: one kind (a preset, a graph, steps, or a router alone; a
/// graph may have a router too), plus threads and a stop condition. In
/// `workflows:`, `file:` takes the workflow of another config file.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = or_list_of_steps)]
pub struct WorkflowSpec {
    /// The workflow's name (its path in events).
    #[serde(default)]
    pub name: Option<String>,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Another config file whose workflow this is (relative to this file).
    #[serde(default)]
    pub file: Option<String>,
    /// Participants take turns in order, seeing every message.
    #[serde(default)]
    pub round_robin: Option<TeamSpec>,
    /// A model picks the next speaker each turn.
    #[serde(default)]
    pub selector: Option<SelectorSpec>,
    /// Agents hand off to each other; a handoff to `user` ends the run.
    #[serde(default)]
    pub swarm: Option<TeamSpec>,
    /// Agents one after another.
    #[serde(default)]
    pub sequential: Option<SequentialSpec>,
    /// Split, work in parallel, combine.
    #[serde(default)]
    pub map_reduce: Option<MapReduceSpec>,
    /// A manager plans, checks progress after every turn, picks who speaks
    /// next, replans when stuck, and writes the final answer.
    #[serde(default)]
    pub magentic: Option<MagenticSpec>,
    /// A control-flow graph.
    #[serde(default)]
    pub graph: Option<GraphSpec>,
    /// cagent-style steps: sequential, `parallel`, `condition`.
    #[serde(default)]
    pub steps: Option<Vec<StepSpec>>,
    /// A plan (planning crate): a text plan, action groups, or a planner.
    #[serde(default)]
    pub plan: Option<PlanSectionSpec>,
    /// The reasoning agent: reasoner turns whose next actions run as
    /// plans, parallel actions on branched copies of it.
    #[serde(default)]
    pub reasoner: Option<ReasonerSpec>,
    /// Routes between participants (alone, or with a graph).
    #[serde(default)]
    pub router: Option<RouterSpec>,
    /// The answering agent(s): the team's answer (a run's final response,
    /// what `troupe serve` and A2A answer with and stream) is the last
    /// message one of these participants (agents, step ids, graph nodes)
    /// produced. By default it is the last message of the run.
    #[serde(default)]
    pub answer: Option<Names>,
    /// The iteration limit of every loop (default 100).
    #[serde(default)]
    pub max_loop_iterations: Option<u32>,
    /// Threads shared by several participants: group name → members.
    #[serde(default)]
    pub shared_threads: BTreeMap<String, Vec<String>>,
    /// When the run stops.
    #[serde(default)]
    pub stop: Option<StopSpec>,
    /// The run's turn ceiling: stop after this many agent turns, or
    /// `unbounded` for none. Unwritten, the kind's default applies (100
    /// for a router, `round_robin`, `selector` and `swarm`; 1000 for
    /// `sequential`, `map_reduce`, `graph`, `steps`, `plan` and
    /// `reasoner`).
    #[serde(default)]
    pub max_turns: Option<TurnLimit>,
    /// At most this many turns at once (router and dataflow runs).
    #[serde(default)]
    pub max_concurrency: Option<usize>,
    /// Keep at most the last this many messages in each thread of a run
    /// and in its result (at least 1; by default everything is kept).
    #[serde(default)]
    pub max_history: Option<usize>,
}

impl WorkflowSpec {
    /// The kinds the workflow names, in the order `round_robin`,
    /// `selector`, `swarm`, `sequential`, `map_reduce`, `magentic`, `graph`, `steps`,
    /// `plan`, `reasoner`, `file` (a router is not counted: it may go with a graph).
    pub fn kinds(&self) -> Vec<&'static str> {
        [
            ("round_robin", self.round_robin.is_some()),
            ("selector", self.selector.is_some()),
            ("swarm", self.swarm.is_some()),
            ("sequential", self.sequential.is_some()),
            ("map_reduce", self.map_reduce.is_some()),
            ("magentic", self.magentic.is_some()),
            ("graph", self.graph.is_some()),
            ("steps", self.steps.is_some()),
            ("plan", self.plan.is_some()),
            ("reasoner", self.reasoner.is_some()),
            ("file", self.file.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// Whether it is a preset team (which builds its own workflow).
    pub fn is_preset(&self) -> bool {
        self.round_robin.is_some()
            || self.selector.is_some()
            || self.swarm.is_some()
            || self.sequential.is_some()
            || self.map_reduce.is_some()
            || self.magentic.is_some()
    }

    /// Whether it has a stop condition (`stop:` or a number of
    /// `max_turns:`).
    pub fn has_stop(&self) -> bool {
        self.stop.is_some() || self.max_turns.and_then(TurnLimit::turns).is_some()
    }

    /// The kind whose default turn ceiling applies: the first of
    /// [`WorkflowSpec::kinds`], or `router` for a router alone.
    pub fn ceiling_kind(&self) -> Option<&'static str> {
        match self.kinds().first() {
            Some(k) => Some(*k),
            None => self.router.is_some().then_some("router"),
        }
    }

    /// The default turn ceiling that applies when `max_turns:` is not
    /// written ([`default_turn_ceiling`] of its kind).
    pub fn default_turn_ceiling(&self) -> Option<u64> {
        self.ceiling_kind().and_then(default_turn_ceiling)
    }
}

/// cagent's list form (seed 004): a workflow may be written as its list of
/// steps (the loader reads it as `steps:`), so the schema takes either.
fn or_list_of_steps(schema: &mut schemars::Schema) {
    let mapping = schema.clone().to_value();
    let mut steps = serde_json::Map::new();
    steps.insert("type".into(), "array".into());
    steps.insert(
        "description".into(),
        "cagent's list form: the workflow's steps, as under `steps:`".into(),
    );
    steps.insert(
        "items".into(),
        serde_json::json!({"$ref": "#/$defs/StepSpec"}),
    );
    let mut either = serde_json::Map::new();
    if let Some(text) = mapping.get("description") {
        either.insert("description".into(), text.clone());
    }
    either.insert(
        "anyOf".into(),
        serde_json::Value::Array(vec![mapping, steps.into()]),
    );
    *schema = schemars::Schema::from(either);
}
