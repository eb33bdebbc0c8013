//! [`Workflow`]: agents composed under a router (and, with the graph
//! module, a control-flow graph), run by a supervisor actor, and itself an
//! [`Agent`].

mod actor_pool;
mod agent_actor;
mod run_actor;
pub(crate) mod snapshot;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use ractor::Actor;
use tokio::sync::oneshot;
use troupe_router::{Router, RouterBuilder};

use crate::agent::{Agent, AgentError, Reply};
use crate::context::{EventSink, EventStream, RunContext};
use crate::error::CheckpointError;
use crate::error::{BuildError, RunError};
use crate::event::Event;
use crate::graph::{Graph, GraphError, GraphProblem, NodeInput};
use crate::message::{Message, MessageId, USER, Usage};
use crate::retry::RetryPolicy;
use crate::stop::{StopCondition, StopReason};
use crate::store::{CheckpointId, CheckpointStore};
use crate::thread::Thread;

use run_actor::{RunActor, RunArgs};

/// How a run ended (when it did not fail).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RunStatus {
    /// Nothing was left to do: no agent could run and nothing was in flight.
    Completed,
    /// A stop condition held.
    Stopped(StopReason),
    /// The run was cancelled through its context.
    Cancelled,
    /// Agents asked the caller for input; answer with [`Workflow::respond`]
    /// (or [`Workflow::respond_in_thread`]) to go on.
    WaitingForInput(Vec<InputRequest>),
}

/// A question an agent asked the caller ([`Reply::ask`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputRequest {
    /// The id to answer it by.
    pub id: String,
    /// The asking participant.
    pub agent: String,
    /// The question.
    pub prompt: String,
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunStatus::Completed => f.write_str("completed"),
            RunStatus::Stopped(r) => write!(f, "stopped ({r})"),
            RunStatus::Cancelled => f.write_str("cancelled"),
            RunStatus::WaitingForInput(r) => write!(
                f,
                "waiting for input ({})",
                r.iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a run gives back.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The updated thread: the conversation, a child thread per participant
    /// and the state to continue from. Append a user message and run again
    /// to carry on.
    pub thread: Thread,
    /// The last message of the last agent to run.
    pub final_response: Option<Arc<Message>>,
    /// Messages produced in this run, in order.
    pub messages: Vec<Arc<Message>>,
    /// How the run ended.
    pub status: RunStatus,
    /// Tokens spent in this run.
    pub usage: Usage,
    /// Agent turns taken in this run.
    pub turns: u64,
    /// The run's id (checkpoints are saved under it).
    pub run_id: String,
    /// The last checkpoint saved, if the workflow has a store.
    pub checkpoint: Option<CheckpointId>,
}

impl RunResult {
    /// The final response's text, or "" if no agent spoke.
    pub fn final_text(&self) -> String {
        self.final_response
            .as_ref()
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default()
    }
}

/// The immutable description of a workflow, shared by all of its runs.
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) names: Vec<Arc<str>>,
    pub(crate) router: Router,
    /// Participant index → thread slot.
    pub(crate) slot_of: Vec<usize>,
    /// Thread slot → key in the run thread's children.
    pub(crate) slot_names: Vec<String>,
    pub(crate) stop: Option<StopCondition>,
    /// Retry policy by participant.
    pub(crate) retries: Vec<Option<RetryPolicy>>,
    /// What each participant receives of its predecessors (graph mode).
    pub(crate) inputs: Vec<NodeInput>,
    /// The control-flow graph, if any.
    pub(crate) graph: Option<Graph>,
    /// Graph without a router: messages travel along the transitions taken.
    pub(crate) edge_delivery: bool,
    /// At most this many turns at once (router and dataflow scheduling).
    pub(crate) max_concurrency: Option<usize>,
    /// Where checkpoints go.
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    /// Also checkpoint every this many deliveries (router-only, dataflow).
    pub(crate) checkpoint_every: Option<u64>,
    /// See [`snapshot::topology_hash`].
    pub(crate) topology_hash: u64,
    /// Agent actors kept between runs (`None`: each run spawns its own).
    pub(crate) pool: Option<actor_pool::ActorPool>,
}

/// Agents composed into one agent.
///
/// Built from participants and a router (see [`WorkflowBuilder`]). A run is a
/// supervisor actor with one linked actor per participant (spawned when the
/// participant first has work, and handed on to the next run unless
/// [`WorkflowBuilder::reuse_actors`] says otherwise): every agent runs
/// whenever its inbox holds a full batch (or a partial one after its max
/// wait), its messages are routed to the inboxes that accept them, and the
/// run ends when nothing can run and nothing is in flight, when the stop
/// condition holds, or on cancellation.
///
/// One `Workflow` value serves any number of concurrent runs; runs keep all
/// their state in the [`Thread`] they return.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_runtime::{FnAgent, Message, Router, RunContext, Thread, Workflow};
///
/// let upper = FnAgent::sync("upper", |t: &Thread| {
///     Ok(t.last().map(|m| m.text_content().to_uppercase()).unwrap_or_default())
/// });
/// let exclaim = FnAgent::sync("exclaim", |t: &Thread| {
///     Ok(format!("{}!", t.last().map(|m| m.text_content().into_owned()).unwrap_or_default()))
/// });
/// let workflow = Workflow::builder()
///     .name("shouter")
///     .participant(upper)
///     .participant(exclaim)
///     .router(
///         Router::builder()
///             .add_route("user", "upper")
///             .add_route("upper", "exclaim")
///             .output("exclaim"),
///     )
///     .build()?;
/// let result = workflow.run(Thread::from_messages([Message::user("hi")]), &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "HI!");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Workflow {
    spec: Arc<Spec>,
}

impl fmt::Debug for Workflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("name", &self.spec.name)
            .field("participants", &self.spec.names)
            .field("stop", &self.spec.stop)
            .finish()
    }
}

impl Workflow {
    /// Starts describing a workflow.
    pub fn builder() -> WorkflowBuilder {
        WorkflowBuilder::default()
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The participants' names, in order.
    pub fn participants(&self) -> impl Iterator<Item = &str> {
        self.spec.names.iter().map(|n| &**n)
    }

    /// The router's warnings (routes that can cascade without end).
    pub fn warnings(&self) -> Vec<String> {
        self.spec
            .router
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect()
    }

    /// Runs the workflow over `thread` until it completes, stops or is
    /// cancelled. Messages of the thread the workflow has not seen yet (all
    /// of them, the first time) are its input.
    pub async fn run(
        &self,
        thread: impl Into<Thread>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        self.execute(thread.into(), ctx.child(&self.spec.name), true, None)
            .await
    }

    /// Continues run `run_id` from a checkpoint in `store` (the latest when
    /// `checkpoint` is `None`), exactly where it was. A checkpoint of
    /// another topology, of an unknown format version, or whose bytes fail
    /// their checksum is refused with a [`CheckpointError`] saying which.
    /// New checkpoints go to the workflow's own store, under the run id of
    /// `ctx` if it has one, else under `run_id`.
    pub async fn run_from_checkpoint(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        checkpoint: Option<CheckpointId>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let (cp, snapshot) = snapshot::load(&self.spec, store, run_id, checkpoint).await?;
        let resumed = snapshot::Resumed {
            snapshot,
            parent: cp.id,
            run_id: ctx
                .run_id()
                .map_or_else(|| run_id.to_string(), |r| r.to_string()),
        };
        self.execute(
            Thread::new(),
            ctx.child(&self.spec.name),
            true,
            Some(resumed),
        )
        .await
    }

    /// Continues run `run_id` from the latest checkpoint in the workflow's
    /// own store (see [`Workflow::run_from_checkpoint`]).
    pub async fn resume(&self, run_id: &str, ctx: &RunContext) -> Result<RunResult, RunError> {
        let Some(store) = self.spec.store.clone() else {
            return Err(CheckpointError::NoStore(self.spec.name.clone()).into());
        };
        self.run_from_checkpoint(store.as_ref(), run_id, None, ctx)
            .await
    }

    /// Answers input request `request` of run `run_id` (waiting in its
    /// latest checkpoint in `store`) and runs on. Works across processes:
    /// all it needs is the store.
    pub async fn respond(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        request: &str,
        answer: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let (cp, mut snapshot) = snapshot::load(&self.spec, store, run_id, None).await?;
        snapshot::deliver_answer(
            &self.spec,
            &mut snapshot.thread,
            run_id,
            request,
            answer.into(),
        )?;
        snapshot.start_len = snapshot.thread.len();
        let resumed = snapshot::Resumed {
            snapshot,
            parent: cp.id,
            run_id: run_id.to_string(),
        };
        self.execute(
            Thread::new(),
            ctx.child(&self.spec.name),
            true,
            Some(resumed),
        )
        .await
    }

    /// Answers input request `request` in a thread a run returned (no store
    /// needed) and runs on.
    pub async fn respond_in_thread(
        &self,
        mut thread: Thread,
        request: &str,
        answer: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let run_id = ctx.run_id().map_or("", |r| &**r).to_string();
        snapshot::deliver_answer(&self.spec, &mut thread, &run_id, request, answer.into())?;
        self.run(thread, ctx).await
    }

    /// The pending input requests of a thread a run returned.
    pub fn pending_requests(thread: &Thread) -> Vec<InputRequest> {
        snapshot::pending_requests(thread)
    }

    /// Runs the workflow on one user message.
    pub async fn run_task(
        &self,
        task: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        self.run(Thread::from_messages([Message::user(task)]), ctx)
            .await
    }

    /// Runs the workflow in the background, streaming its events live.
    pub fn run_stream(&self, thread: impl Into<Thread>, ctx: &RunContext) -> RunStream {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = match ctx.sink() {
            EventSink::None => EventSink::Channel(tx),
            other => EventSink::Many(vec![other.clone(), EventSink::Channel(tx)]),
        };
        let ctx = ctx.with_events(sink);
        let workflow = self.clone();
        let thread = thread.into();
        let handle = tokio::spawn(async move { workflow.run(thread, &ctx).await });
        RunStream {
            events: EventStream::from_receiver(rx),
            handle,
        }
    }

    /// Runs with `ctx` already carrying this run's path. Only a top-level
    /// run checkpoints: a nested run's state rides in its parent's.
    async fn execute(
        &self,
        thread: Thread,
        ctx: RunContext,
        top_level: bool,
        resumed: Option<snapshot::Resumed>,
    ) -> Result<RunResult, RunError> {
        let (tx, rx) = oneshot::channel();
        let run_path = ctx.path().to_string();
        // If the caller stops awaiting, the run must not go on unseen.
        let guard = ctx.cancellation().clone().drop_guard();
        let args = RunArgs {
            spec: self.spec.clone(),
            thread,
            ctx,
            reply: tx,
            top_level,
            resumed,
        };
        let spawned = Actor::spawn(None, RunActor, args).await;
        let result = match spawned {
            Ok(_) => rx.await.unwrap_or_else(|_| {
                Err(RunError::Runtime {
                    workflow: run_path,
                    reason: "the run's supervisor stopped without a result".into(),
                })
            }),
            Err(e) => Err(RunError::Runtime {
                workflow: run_path,
                reason: format!("cannot start the run's supervisor: {e}"),
            }),
        };
        guard.disarm();
        result
    }
}

/// A run in the background with its live events.
#[derive(Debug)]
pub struct RunStream {
    events: EventStream,
    handle: tokio::task::JoinHandle<Result<RunResult, RunError>>,
}

impl RunStream {
    /// The next event; `None` once the run is over and every event was read.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.next().await
    }

    /// Waits for the run's result (events not read yet are dropped).
    pub async fn result(self) -> Result<RunResult, RunError> {
        self.handle.await.unwrap_or_else(|e| {
            Err(RunError::Runtime {
                workflow: String::new(),
                reason: format!("the run's task ended abnormally: {e}"),
            })
        })
    }
}

#[async_trait]
impl Agent for Workflow {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    /// Runs the workflow as one turn of an outer workflow: the reply is the
    /// inner final response (as a message of this workflow's name, its usage
    /// the whole inner run's), and the inner state is kept in the thread.
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        // The outer run keeps its own reference so nothing is lost if this
        // turn is cancelled; the inner run works on a copy.
        let working = Arc::try_unwrap(thread).unwrap_or_else(|shared| (*shared).clone());
        let result = self
            .execute(working, ctx, false, None)
            .await
            .map_err(|e| AgentError::Workflow(Box::new(e)))?;
        let mut thread = result.thread;
        let mut messages = Vec::new();
        if let Some(last) = result.final_response {
            let mut reply = (*last).clone();
            reply.id = MessageId::new();
            reply.source = Arc::from(self.spec.name.as_str());
            reply.usage = Some(result.usage);
            reply
                .metadata
                .insert("inner_source".into(), last.source.to_string());
            // Recorded as already seen, so the next inner run does not take
            // its own answer for new input.
            thread.push(reply.clone());
            let len = thread.len();
            if let Some(state) = thread.state_mut() {
                state.consumed = len;
            }
            messages.push(reply);
        }
        Ok(Reply {
            messages,
            thread: Some(thread),
            next: None,
            request: None,
            private: Vec::new(),
        })
    }
}

/// Describes a [`Workflow`]: participants, router, shared threads, stop
/// condition.
#[derive(Default)]
pub struct WorkflowBuilder {
    name: Option<String>,
    description: String,
    agents: Vec<Arc<dyn Agent>>,
    router: Option<RouterBuilder>,
    groups: Vec<(String, Vec<String>)>,
    stop: Option<StopCondition>,
    graph: Option<Graph>,
    retries: Vec<(String, RetryPolicy)>,
    max_concurrency: Option<usize>,
    store: Option<Arc<dyn CheckpointStore>>,
    checkpoint_every: Option<u64>,
    reuse_actors: Option<bool>,
}

impl fmt::Debug for WorkflowBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowBuilder")
            .field("name", &self.name)
            .field("participants", &self.agents.len())
            .finish()
    }
}

impl WorkflowBuilder {
    /// Names the workflow (default `workflow`); the name is its path in
    /// events and its name as a participant of another workflow.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Describes the workflow (for selectors and tool descriptions).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a participant.
    pub fn participant(mut self, agent: impl Agent) -> Self {
        self.agents.push(Arc::new(agent));
        self
    }

    /// Adds a shared participant.
    pub fn participant_arc(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agents.push(agent);
        self
    }

    /// Adds several shared participants.
    pub fn participants(mut self, agents: impl IntoIterator<Item = Arc<dyn Agent>>) -> Self {
        self.agents.extend(agents);
        self
    }

    /// Sets the router; without one every message reaches every other
    /// participant.
    pub fn router(mut self, router: RouterBuilder) -> Self {
        self.router = Some(router);
        self
    }

    /// Makes `members` share one thread named `group`: a message enters it
    /// once however many members receive it.
    pub fn shared_thread<S: Into<String>>(
        mut self,
        group: impl Into<String>,
        members: impl IntoIterator<Item = S>,
    ) -> Self {
        self.groups
            .push((group.into(), members.into_iter().map(Into::into).collect()));
        self
    }

    /// Sets the stop condition.
    pub fn stop_condition(mut self, stop: StopCondition) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Runs the workflow along a control-flow graph: the graph's nodes are
    /// the participants and decide who runs; the router, if one is set too,
    /// decides what each inbox receives (without one, messages travel along
    /// the transitions taken).
    pub fn graph(mut self, graph: Graph) -> Self {
        self.graph = Some(graph);
        self
    }

    /// Runs at most `n` turns at once (router-only and dataflow scheduling;
    /// a superstep always runs whole). `n` of 0 counts as 1.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n.max(1));
        self
    }

    /// Saves checkpoints of top-level runs in `store`: after every
    /// superstep of a graph, and when a run ends (completed, stopped,
    /// cancelled, waiting for input).
    pub fn checkpoint_store(mut self, store: Arc<dyn CheckpointStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Also saves a checkpoint once `n` messages have been delivered since
    /// the last one, whenever no turn is under way (router-only and dataflow
    /// runs, which have no supersteps).
    pub fn checkpoint_every(mut self, n: u64) -> Self {
        self.checkpoint_every = Some(n.max(1));
        self
    }

    /// Whether runs hand their agents' actors on to the next run of this
    /// workflow (default `true`). Spawning an actor costs more than a turn,
    /// so a workflow run many times — a graph per request, a team per chat
    /// message — runs faster on kept actors; each participant keeps at most
    /// one, idle between runs, until the workflow is dropped. Turn it off
    /// for a huge fan-out run rarely, whose idle actors would hold memory
    /// (about 14 KiB each) between runs.
    pub fn reuse_actors(mut self, reuse: bool) -> Self {
        self.reuse_actors = Some(reuse);
        self
    }

    /// Retries the failed turns of participant `name`.
    pub fn retry(mut self, name: impl Into<String>, policy: RetryPolicy) -> Self {
        self.retries.push((name.into(), policy));
        self
    }

    /// Checks that the parts fit and builds the workflow.
    pub fn build(mut self) -> Result<Workflow, BuildError> {
        let name = self.name.unwrap_or_else(|| "workflow".into());
        if let Some(graph) = &self.graph {
            if !self.agents.is_empty() {
                return Err(BuildError::GraphAndParticipants(name));
            }
            self.agents = graph.agents.clone();
            if self.stop.is_none()
                && graph.max_supersteps.is_none()
                && let Some(cycle) = graph.endless_cycles.first()
            {
                return Err(BuildError::Graph(GraphError {
                    problems: vec![GraphProblem::CycleWithoutExit(cycle.clone())],
                }));
            }
        }
        if self.agents.is_empty() {
            return Err(BuildError::NoParticipants(name));
        }
        let names: Vec<Arc<str>> = self.agents.iter().map(|a| Arc::from(a.name())).collect();
        let mut seen = HashSet::new();
        for n in &names {
            if &**n == USER {
                return Err(BuildError::ReservedName(n.to_string()));
            }
            if !seen.insert(n.clone()) {
                return Err(BuildError::DuplicateParticipant(n.to_string()));
            }
        }
        let edge_delivery = self.graph.is_some() && self.router.is_none();
        // Without a router every message reaches every other participant
        // (or, with a graph, travels along transitions), and whatever an
        // agent says is a possible result of the workflow.
        let router = match (self.router, &self.graph) {
            (Some(r), None) => r,
            (Some(r), Some(_)) => names.iter().fold(r, |b, n| b.output(n.to_string())),
            // Messages travel along the edges: the router only keeps the
            // inboxes (which accept the caller's input, answers to input
            // requests, and every predecessor). Sparse on purpose — a
            // broadcast table would be participants² for a wide fan-out.
            (None, Some(g)) => {
                let mut r = RouterBuilder::default();
                for e in &g.edges {
                    r = r.add_route(g.names[e.from].clone(), g.names[e.to].clone());
                }
                for n in &names {
                    r = r.add_route(USER, n.to_string()).output(n.to_string());
                }
                r
            }
            (None, None) => names
                .iter()
                .fold(RouterBuilder::default(), |b, n| b.output(n.to_string())),
        };
        let router = router.build(&names.iter().map(|n| &**n).collect::<Vec<_>>())?;

        let mut retries: Vec<Option<RetryPolicy>> = match &self.graph {
            Some(g) => g.retries.clone(),
            None => vec![None; names.len()],
        };
        for (agent, policy) in self.retries {
            let Some(i) = names.iter().position(|n| **n == *agent) else {
                return Err(BuildError::UnknownParticipant {
                    option: "retry".into(),
                    agent,
                });
            };
            retries[i] = Some(policy);
        }
        let inputs = match &self.graph {
            Some(g) => g.inputs.clone(),
            None => vec![NodeInput::Messages; names.len()],
        };

        // Every participant has its own slot unless a shared group joins them.
        let mut slot_names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut slot_of: Vec<usize> = (0..names.len()).collect();
        let mut group_of: BTreeMap<usize, String> = BTreeMap::new();
        for (group, members) in &self.groups {
            if slot_names.iter().any(|s| s == group) {
                return Err(BuildError::GroupNameTaken(group.clone()));
            }
            let slot = slot_names.len();
            slot_names.push(group.clone());
            for m in members {
                let Some(i) = names.iter().position(|n| **n == **m) else {
                    return Err(BuildError::UnknownGroupMember {
                        group: group.clone(),
                        agent: m.clone(),
                    });
                };
                if let Some(first) = group_of.insert(i, group.clone()) {
                    return Err(BuildError::AgentInTwoGroups {
                        agent: m.clone(),
                        first,
                        second: group.clone(),
                    });
                }
                slot_of[i] = slot;
            }
        }
        let topology = format!(
            "name={name};participants={names:?};slots={slot_of:?}/{slot_names:?};routes={:?};graph={}",
            router.routes(),
            self.graph
                .as_ref()
                .map(|g| g.topology())
                .unwrap_or_default()
        );
        Ok(Workflow {
            spec: Arc::new(Spec {
                topology_hash: snapshot::topology_hash(&topology),
                store: self.store,
                checkpoint_every: self.checkpoint_every,
                name,
                description: self.description,
                agents: self.agents,
                names,
                router,
                slot_of,
                slot_names,
                stop: self.stop,
                retries,
                inputs,
                graph: self.graph,
                edge_delivery,
                max_concurrency: self.max_concurrency,
                pool: self
                    .reuse_actors
                    .unwrap_or(true)
                    .then(actor_pool::ActorPool::default),
            }),
        })
    }
}
