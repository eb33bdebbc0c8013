//! [`MapReduce`]: split a task, work the parts in parallel, combine.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use troupe_runtime::{
    Agent, AgentError, Content, Graph, Message, Renamed, Reply, Router, RunContext, StopCondition,
    Thread, Workflow, graph::Isolation,
};

use crate::error::PresetError;
use crate::team::Team;

/// The name of the node that runs the workers.
const MAP: &str = "map";

/// The child of the map node's thread that holds its workers' run while
/// the node's turn is under way (reported as its progress), so that a turn
/// cut short goes on with the workers that had not finished.
const WORKERS_RUN: &str = "map#workers";

type SplitFn = Arc<dyn Fn(&Thread) -> Vec<String> + Send + Sync>;

enum Mapper {
    Agent(Arc<dyn Agent>),
    Split(SplitFn),
}

/// A mapper splits the task into sub-tasks (as many as it decides, at run
/// time); one worker per sub-task runs in parallel, each on its own thread
/// (fresh, or inheriting a copy of the map's); a reducer combines their
/// results — it receives every worker's answer, in sub-task order.
///
/// As a workflow: `mapper → map → reducer`, where `map` runs an inner
/// router-only workflow with one participant per sub-task (`worker#1`,
/// `worker#2`, …), so workers are actors of the same engine and their
/// events carry paths such as `team/map/worker#3`.
///
/// A mapper agent's answer is read as a JSON array of strings (or of
/// objects with a `task` field), else as one sub-task per non-empty line
/// (bullets and numbering removed); see [`MapReduce::split_subtasks`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_presets::MapReduce;
/// use troupe_runtime::{FnAgent, RunContext, Thread};
///
/// let team = MapReduce::builder()
///     .split(|t: &Thread| t.last().map(|m| m.text_content().split(',').map(str::to_string).collect()).unwrap_or_default())
///     .worker(FnAgent::sync("upper", |t: &Thread| Ok(t.last().map(|m| m.text_content().to_uppercase()).unwrap_or_default())))
///     .reducer(FnAgent::sync("join", |t: &Thread| {
///         Ok(t.messages().iter().map(|m| m.text_content().into_owned()).collect::<Vec<_>>().join("+"))
///     }))
///     .build()?;
/// let result = team.run_task("a,b,c", &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "A+B+C");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MapReduce;

impl MapReduce {
    /// Starts describing a map-reduce.
    pub fn builder() -> MapReduceBuilder {
        MapReduceBuilder::default()
    }

    /// Reads sub-tasks out of a mapper's answer, as a map-reduce does: a
    /// JSON array of strings, or of objects with a `task` (or `request`)
    /// field; else one per non-empty line, with list bullets and numbering
    /// removed.
    ///
    /// ```
    /// use troupe_presets::MapReduce;
    /// assert_eq!(MapReduce::split_subtasks(r#"["a", "b"]"#), ["a", "b"]);
    /// assert_eq!(MapReduce::split_subtasks("1. first\n- second\n\n* third"), ["first", "second", "third"]);
    /// ```
    pub fn split_subtasks(text: &str) -> Vec<String> {
        split_subtasks(text)
    }
}

/// How many sub-tasks a [`MapReduce`] run takes at most unless
/// [`MapReduceBuilder::max_subtasks`] says otherwise.
pub const DEFAULT_MAX_SUBTASKS: usize = 10_000;

/// Builds a [`MapReduce`] workflow.
#[derive(Default)]
pub struct MapReduceBuilder {
    team: Team,
    mapper: Option<Mapper>,
    worker: Option<Arc<dyn Agent>>,
    reducer: Option<Arc<dyn Agent>>,
    isolation: Isolation,
    max_concurrency: Option<usize>,
    max_subtasks: Option<usize>,
}

impl MapReduceBuilder {
    /// Names the team.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.team.name = Some(name.into());
        self
    }

    /// Describes the team.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.team.description = description.into();
        self
    }

    /// An agent that splits the task (see [`MapReduce::split_subtasks`] for what its
    /// answer may look like).
    pub fn mapper(mut self, agent: impl Agent) -> Self {
        self.mapper = Some(Mapper::Agent(Arc::new(agent)));
        self
    }

    /// A function that splits the task, instead of a mapper agent.
    pub fn split(mut self, f: impl Fn(&Thread) -> Vec<String> + Send + Sync + 'static) -> Self {
        self.mapper = Some(Mapper::Split(Arc::new(f)));
        self
    }

    /// The agent that works each sub-task.
    pub fn worker(mut self, agent: impl Agent) -> Self {
        self.worker = Some(Arc::new(agent));
        self
    }

    /// The worker, shared.
    pub fn worker_arc(mut self, agent: Arc<dyn Agent>) -> Self {
        self.worker = Some(agent);
        self
    }

    /// The agent that combines the results.
    pub fn reducer(mut self, agent: impl Agent) -> Self {
        self.reducer = Some(Arc::new(agent));
        self
    }

    /// How workers start their threads (default [`Isolation::Fresh`]: the
    /// sub-task only).
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Runs at most `n` workers at once.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n.max(1));
        self
    }

    /// Fails a run whose mapper splits the task into more than `n`
    /// sub-tasks (default [`DEFAULT_MAX_SUBTASKS`]): each sub-task is a
    /// worker of its own, so a mapper gone wrong would otherwise take the
    /// memory of as many workers as it cares to list. `n` of 0 is refused
    /// when the team is built.
    pub fn max_subtasks(mut self, n: usize) -> Self {
        self.max_subtasks = Some(n);
        self
    }

    /// Sets the stop condition.
    pub fn stop_condition(mut self, stop: StopCondition) -> Self {
        self.team.stop = Some(stop);
        self
    }

    /// Stops after `n` turns.
    pub fn max_turns(mut self, n: u64) -> Self {
        self.team.max_turns = Some(n);
        self
    }

    /// Keeps at most the last `n` messages in each of the team's threads
    /// and in a run's result (`WorkflowBuilder::max_history`).
    pub fn max_history(mut self, n: usize) -> Self {
        self.team.max_history = Some(n.max(1));
        self
    }

    /// Saves a checkpoint after every superstep and when a run ends.
    pub fn checkpoint_store(
        mut self,
        store: Arc<dyn troupe_runtime::store::CheckpointStore>,
    ) -> Self {
        self.team.store = Some(store);
        self
    }

    /// With a checkpoint store, also saves a checkpoint once `n` messages
    /// have been delivered since the last one
    /// (`WorkflowBuilder::checkpoint_every`). `n` of 0 counts as 1.
    pub fn checkpoint_every(mut self, n: u64) -> Self {
        self.team.every = Some(n.max(1));
        self
    }

    /// Builds the team as a workflow.
    pub fn build(self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("map_reduce");
        let missing = |what: &str| PresetError::Missing {
            team: name.clone(),
            what: what.into(),
        };
        let worker = self.worker.clone().ok_or_else(|| missing("a worker"))?;
        let reducer = self.reducer.clone().ok_or_else(|| missing("a reducer"))?;
        let mapper = self
            .mapper
            .ok_or_else(|| missing("a mapper or a split function"))?;
        for reserved in [MAP] {
            if reducer.name() == reserved
                || matches!(&mapper, Mapper::Agent(a) if a.name() == reserved)
            {
                return Err(PresetError::ReservedName {
                    team: name,
                    name: reserved.into(),
                });
            }
        }
        let max_subtasks = self.max_subtasks.unwrap_or(DEFAULT_MAX_SUBTASKS);
        if max_subtasks == 0 {
            return Err(PresetError::ZeroLimit {
                team: name,
                what: "max_subtasks".into(),
            });
        }
        let (split, mapper_agent) = match mapper {
            Mapper::Agent(a) => (None, Some(a)),
            Mapper::Split(f) => (Some(f), None),
        };
        let map = MapStep {
            worker,
            split,
            isolation: self.isolation,
            max_concurrency: self.max_concurrency,
            max_subtasks,
            last: Mutex::new(None),
        };
        let mut graph = Graph::builder();
        if let Some(m) = &mapper_agent {
            graph = graph
                .add_agent_arc(m.clone())
                .add_edge(m.name().to_string(), MAP);
        }
        let graph = graph
            .add_agent(map)
            .add_agent_arc(reducer.clone())
            .add_edge(MAP, reducer.name().to_string())
            .build()?;
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph);
        workflow = self.team.configure(workflow);
        Ok(workflow.build()?)
    }
}

/// See [`MapReduce::split_subtasks`].
fn split_subtasks(text: &str) -> Vec<String> {
    let trimmed = text.trim();
    if let Ok(serde_json::Value::Array(items)) = serde_json::from_str(trimmed) {
        return items
            .into_iter()
            .filter_map(|v| match v {
                serde_json::Value::String(s) => Some(s),
                serde_json::Value::Object(o) => o
                    .get("task")
                    .or_else(|| o.get("request"))
                    .and_then(|t| t.as_str())
                    .map(str::to_string),
                other => Some(other.to_string()),
            })
            .collect();
    }
    trimmed
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = l.trim_start_matches(['-', '*', '•']);
            let digits = l.chars().take_while(|c| c.is_ascii_digit()).count();
            let l = if digits > 0 && l[digits..].starts_with(['.', ')']) {
                &l[digits + 1..]
            } else {
                l
            };
            l.trim().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// The node running one worker per sub-task.
struct MapStep {
    worker: Arc<dyn Agent>,
    split: Option<SplitFn>,
    isolation: Isolation,
    max_concurrency: Option<usize>,
    /// More sub-tasks than this fail the run.
    max_subtasks: usize,
    /// The inner workflow of the last run and its number of workers: a run
    /// with as many sub-tasks reuses it, and with it the worker actors the
    /// last run handed on (see `WorkflowBuilder::reuse_actors`).
    last: Mutex<Option<(usize, Workflow)>>,
}

impl fmt::Debug for MapStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapStep")
            .field("worker", &self.worker.name())
            .finish()
    }
}

impl MapStep {
    /// The inner workflow for `n` workers: task `i`'s message goes to
    /// worker `i` alone. Built once per number of workers in a row.
    fn inner(
        &self,
        n: usize,
        worker_name: &dyn Fn(usize) -> String,
    ) -> Result<Workflow, AgentError> {
        // A poisoned lock only means a panic elsewhere while it was held;
        // the cache is replaced whole, so it holds a built workflow or
        // nothing, and is still usable.
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((count, inner)) = last.as_ref()
            && *count == n
        {
            return Ok(inner.clone());
        }
        let mut router = Router::builder();
        let mut inner = Workflow::builder().name(MAP);
        for i in 0..n {
            let source = format!("task#{}", i + 1);
            router = router
                .entry(source.clone())
                .add_route(source, worker_name(i))
                .output(worker_name(i));
            inner = inner.participant(Renamed::new(worker_name(i), self.worker.clone()));
        }
        inner = inner.router(router);
        if let Some(n) = self.max_concurrency {
            inner = inner.max_concurrency(n);
        }
        let inner = inner
            .build()
            .map_err(|e| AgentError::failed(format!("cannot build the map: {e}")).with_source(e))?;
        *last = Some((n, inner.clone()));
        Ok(inner)
    }
}

impl MapStep {
    /// The workers' run's input: sub-task `i` from `task#i`, and, when
    /// workers inherit, a copy of the map node's `thread` for each.
    fn subtask_thread(
        &self,
        thread: &Thread,
        subtasks: &[String],
        worker_name: &dyn Fn(usize) -> String,
    ) -> Thread {
        let mut input = Thread::new();
        for (i, task) in subtasks.iter().enumerate() {
            input.push(Message::new(
                format!("task#{}", i + 1),
                Content::Text(task.clone()),
            ));
            if self.isolation == Isolation::Inherit {
                let mut own = Thread::new();
                own.extend_shared(thread.messages().iter().cloned());
                input.children_mut().insert(worker_name(i), Box::new(own));
            }
        }
        input
    }
}

#[async_trait]
impl Agent for MapStep {
    fn name(&self) -> &str {
        MAP
    }

    fn description(&self) -> &str {
        "runs one worker per sub-task, in parallel"
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let subtasks = match &self.split {
            Some(f) => f(&thread),
            None => thread
                .last()
                .map(|m| split_subtasks(&m.text_content()))
                .unwrap_or_default(),
        };
        if subtasks.is_empty() {
            return Err(AgentError::failed("the mapper produced no sub-tasks"));
        }
        if subtasks.len() > self.max_subtasks {
            return Err(AgentError::failed(format!(
                "the mapper produced {} sub-tasks, more than the limit of {} \
                 (raise it with `max_subtasks` if that many workers are meant)",
                subtasks.len(),
                self.max_subtasks
            )));
        }
        let base = self.worker.name().to_string();
        let worker_name = |i: usize| format!("{base}#{}", i + 1);
        // A turn cut short goes on from the workers' run as it last
        // reported: the workers that finished are not asked again.
        let (own, input) = match thread.child(WORKERS_RUN) {
            Some(run) => {
                let mut own = (*thread).clone();
                own.children_mut().remove(WORKERS_RUN);
                (Some(own), run.clone())
            }
            None => (None, self.subtask_thread(&thread, &subtasks, &worker_name)),
        };
        let inner = self.inner(subtasks.len(), &worker_name)?;
        let input = Arc::new(input);
        // When the run above checkpoints, the workers' run reports into
        // this node's thread, under `WORKERS_RUN`.
        let lent = thread.clone();
        let ctx = match ctx.relay_progress(&thread, move |run| {
            let mut t = (*lent).clone();
            t.children_mut()
                .insert(WORKERS_RUN.to_string(), Box::new(run));
            t
        }) {
            Some(relay) => ctx.with_progress_relay(&relay, &input),
            None => ctx,
        };
        // Run as an agent so the workers' paths sit under this node's path.
        let parts = Agent::run(&inner, input, ctx).await?.into_parts();
        let done = parts.thread.unwrap_or_default();
        // Each worker's last message, found in one pass: a search per
        // worker would make gathering quadratic in the number of workers.
        let mut last: HashMap<&str, &Arc<Message>> = HashMap::with_capacity(subtasks.len());
        for m in done.messages() {
            last.insert(&m.source, m);
        }
        let mut results = Vec::with_capacity(subtasks.len());
        for (i, task) in subtasks.iter().enumerate() {
            let name = worker_name(i);
            if let Some(m) = last.get(name.as_str()) {
                let mut out = Message::new("", m.content.clone())
                    .with_metadata("worker", name)
                    .with_metadata("subtask", task.clone());
                out.usage = m.usage;
                results.push(out);
            }
        }
        // What the workers changed in the run's state goes up with the
        // results; a turn that went on from its progress leaves the node's
        // thread as it was before the workers ran.
        let out = Reply::from(results).with_state_delta(parts.state);
        Ok(match own {
            Some(own) => out.with_thread(own),
            None => out,
        })
    }
}
