//! Plan → [`Workflow`]: every step a graph node, every dependency an
//! unconditional transition, and what each step receives decided by its
//! node agent.
//!
//! How the parts map onto the engine:
//! - a step is a node named by its id, running the step's agent through a
//!   wrapper that builds the agent's thread (task, earlier results as the
//!   [`ResultPassing`] mode says, request);
//! - a node with several predecessors waits for all of them
//!   ([`Join::All`]); a parallel group is a fan-out into its branches and a
//!   fan-in at its summarizer node;
//! - every node's thread inherits its predecessors' ([`Isolation::Inherit`])
//!   so the task and every earlier result reach it, whoever sent the plan
//!   its input; the wrapper then picks what the step is allowed to see —
//!   its predecessors', all earlier steps', or, for a fresh branch,
//!   nothing;
//! - stop flags are a stop condition on [`Content::Stop`](troupe_runtime::Content::Stop) messages
//!   ([`StopFlag::condition`]), aborts are failed turns.
//!
//! The result is a plain workflow: it nests in other workflows, streams
//! events, checkpoints between supersteps and runs under either scheduler.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use troupe_runtime::{
    Graph, RetryPolicy, StopCondition, Workflow, graph::Isolation, graph::Join, graph::Scheduler,
};

use crate::error::PlanError;
use crate::flags::StopFlag;
use crate::passing::{ResultPassing, ResultScope};
use crate::plan::{NodeKind, Plan};
use crate::step::{Body, Roster, StepAgent};
use crate::summarizer::Summarizer;

/// How a [`Plan`] becomes a [`Workflow`].
///
/// ```
/// use troupe_planning::{CompileOptions, ResultPassing, ResultScope};
/// use troupe_runtime::graph::Scheduler;
///
/// let options = CompileOptions::new()
///     .name("errands")
///     .passing(ResultPassing::Messages)
///     .scope(ResultScope::AllEarlier)
///     .scheduler(Scheduler::Dataflow);
/// assert_eq!(options.workflow_name(), "errands");
/// ```
#[derive(Debug, Clone)]
pub struct CompileOptions {
    name: String,
    description: String,
    passing: ResultPassing,
    step_passing: BTreeMap<String, ResultPassing>,
    scope: Option<ResultScope>,
    scheduler: Scheduler,
    stop: Option<StopCondition>,
    max_concurrency: Option<usize>,
    max_history: Option<usize>,
    retry: Option<RetryPolicy>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            name: "plan".into(),
            description: String::new(),
            passing: ResultPassing::default(),
            step_passing: BTreeMap::new(),
            scope: None,
            scheduler: Scheduler::default(),
            stop: None,
            max_concurrency: None,
            max_history: None,
            retry: None,
        }
    }
}

impl CompileOptions {
    /// The defaults: a workflow named `plan`, results as attachments, the
    /// plan's own scope, supersteps.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the workflow (its path in events).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The workflow's name.
    pub fn workflow_name(&self) -> &str {
        &self.name
    }

    /// Describes the workflow.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// How steps receive earlier results (default
    /// [`ResultPassing::Attachments`]). Summarizer agents always receive
    /// their branches as attachments unless [`CompileOptions::step_passing`]
    /// names them.
    pub fn passing(mut self, passing: ResultPassing) -> Self {
        self.passing = passing;
        self
    }

    /// How step `id` receives earlier results, overriding
    /// [`CompileOptions::passing`].
    pub fn step_passing(mut self, id: impl Into<String>, passing: ResultPassing) -> Self {
        self.step_passing.insert(id.into(), passing);
        self
    }

    /// Whose results steps receive (default: the plan's own —
    /// [`ResultScope::Predecessors`] for text plans,
    /// [`ResultScope::AllEarlier`] for action groups).
    pub fn scope(mut self, scope: ResultScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The scheduler (default [`Scheduler::Supersteps`]; with
    /// [`Scheduler::Dataflow`] a step starts as soon as its own
    /// predecessors are done).
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// A stop condition besides the stop flags (a timeout, a token
    /// budget…).
    pub fn stop_condition(mut self, stop: StopCondition) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Runs at most `n` steps at once (dataflow scheduling).
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n.max(1));
        self
    }

    /// Keeps at most the last `n` messages in each thread of a run
    /// (`WorkflowBuilder::max_history`).
    pub fn max_history(mut self, n: usize) -> Self {
        self.max_history = Some(n.max(1));
        self
    }

    /// Retries every step's failed turns.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }
}

impl Plan {
    /// Compiles the plan with the default [`CompileOptions`].
    pub fn compile(&self) -> Result<Workflow, PlanError> {
        self.compile_with(&CompileOptions::default())
    }

    /// Compiles the plan into a workflow.
    pub fn compile_with(&self, options: &CompileOptions) -> Result<Workflow, PlanError> {
        for id in options.step_passing.keys() {
            if !self.nodes.iter().any(|n| n.id == *id) {
                return Err(PlanError::UnknownOptionStep {
                    option: "step_passing".into(),
                    id: id.clone(),
                });
            }
        }
        let n = self.nodes.len();
        let mut preds = vec![Vec::new(); n];
        let mut has_out = vec![false; n];
        for &(a, b) in &self.edges {
            preds[b].push(a);
            has_out[a] = true;
        }
        let order = self.topological_order();
        let mut rank = vec![0; n];
        for (r, &x) in order.iter().enumerate() {
            rank[x] = r;
        }
        // Ancestor sets, filled in topological order so every predecessor's
        // set is complete first.
        let mut ancestors = vec![vec![false; n]; n];
        for &x in &order {
            let mut mine = vec![false; n];
            for &p in &preds[x] {
                for (m, &a) in mine.iter_mut().zip(&ancestors[p]) {
                    *m |= a;
                }
                mine[p] = true;
            }
            ancestors[x] = mine;
        }
        let scope = options.scope.unwrap_or(self.scope);
        let roster = Arc::new(Roster {
            ids: self.nodes.iter().map(|n| n.id.clone()).collect(),
            descriptions: self.nodes.iter().map(|n| self.description_of(n)).collect(),
            index: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.clone(), i))
                .collect::<HashMap<_, _>>(),
        });

        let mut graph = Graph::builder().scheduler(options.scheduler);
        for (x, node) in self.nodes.iter().enumerate() {
            let mut sources = match &node.kind {
                NodeKind::Merge { branches, .. } => branches.clone(),
                NodeKind::Branch {
                    isolation: Isolation::Fresh,
                    ..
                } => Vec::new(),
                _ => match scope {
                    ResultScope::Predecessors => preds[x].clone(),
                    ResultScope::AllEarlier => (0..n)
                        .filter(|&a| ancestors[x][a] && !self.hidden_behind_merge(a, &ancestors[x]))
                        .collect(),
                },
            };
            sources.sort_by_key(|&s| (rank[s], s));
            let passing = options.step_passing.get(&node.id).cloned();
            let (body, request, passing) = match &node.kind {
                NodeKind::Step(step) | NodeKind::Branch { step, .. } => (
                    Body::Agent(step.agent().clone()),
                    step.request().to_string(),
                    passing.unwrap_or_else(|| options.passing.clone()),
                ),
                NodeKind::Merge {
                    summarizer,
                    branches,
                } => {
                    let ids: Vec<&str> = branches
                        .iter()
                        .map(|&b| self.nodes[b].id.as_str())
                        .collect();
                    let body = match summarizer {
                        Summarizer::Collect => Body::Collect,
                        Summarizer::Agent(a) => Body::Agent(a.clone()),
                        Summarizer::Fn(f) => Body::Summarize(f.clone()),
                    };
                    (
                        body,
                        format!("Combine the results of {} into one answer.", ids.join(", ")),
                        passing.unwrap_or(ResultPassing::Attachments),
                    )
                }
            };
            graph = graph.add_agent(StepAgent {
                id: node.id.clone(),
                description: roster.descriptions[x].clone(),
                request,
                body,
                passing,
                sources,
                roster: roster.clone(),
            });
            if preds[x].len() > 1 {
                graph = graph.join(node.id.clone(), Join::All);
            }
            if has_out[x] {
                graph = graph.fan_out(node.id.clone(), Isolation::Inherit);
            }
            if let Some(policy) = &options.retry {
                graph = graph.retry(node.id.clone(), policy.clone());
            }
        }
        for &(a, b) in &self.edges {
            graph = graph.add_edge(self.nodes[a].id.clone(), self.nodes[b].id.clone());
        }
        let stop = match &options.stop {
            Some(extra) => StopFlag::condition() | extra.clone(),
            None => StopFlag::condition(),
        };
        let mut workflow = Workflow::builder()
            .name(options.name.clone())
            .description(options.description.clone())
            .graph(graph.build()?)
            .stop_condition(stop);
        if let Some(n) = options.max_history {
            workflow = workflow.max_history(n);
        }
        if let Some(limit) = options.max_concurrency {
            workflow = workflow.max_concurrency(limit);
        }
        Ok(workflow.build()?)
    }

    /// Whether `node` is a parallel branch whose summarizer is among
    /// `ancestors`: then the summarizer's result stands for it.
    fn hidden_behind_merge(&self, node: usize, ancestors: &[bool]) -> bool {
        matches!(self.nodes[node].kind, NodeKind::Branch { merge, .. } if ancestors[merge])
    }
}
