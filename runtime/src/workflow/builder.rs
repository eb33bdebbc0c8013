//! [`WorkflowBuilder`]: describing a workflow and checking that its parts
//! fit.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use troupe_router::{Router, RouterBuilder};

use super::actor_pool::ActorPool;
use super::api::Workflow;
use super::child_paths::ChildPaths;
use super::snapshot;
use super::spec::Spec;
use crate::agent::Agent;
use crate::error::BuildError;
use crate::graph::{Graph, GraphError, GraphProblem, NodeInput};
use crate::message::USER;
use crate::retry::RetryPolicy;
use crate::stop::StopCondition;
use crate::store::{CheckpointStore, Durability};

impl Workflow {
    /// Starts describing a workflow.
    pub fn builder() -> WorkflowBuilder {
        WorkflowBuilder::default()
    }

    /// The workflow with `names` as its answering agents, in place of any
    /// it had (see [`WorkflowBuilder::answer`]; no name: the last message
    /// answers) — for a workflow built by someone else, a preset team or
    /// a compiled plan. Refused for a name that is not a participant, and
    /// for a workflow already cloned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use troupe_runtime::{FnAgent, Router, RunContext, Thread, Workflow};
    ///
    /// let team = || {
    ///     Workflow::builder()
    ///         .participant(FnAgent::sync("writer", |_: &Thread| Ok("a poem")))
    ///         .participant(FnAgent::sync("critic", |_: &Thread| Ok("APPROVE")))
    ///         .router(
    ///             Router::builder()
    ///                 .add_route("user", "writer")
    ///                 .add_route("writer", "critic")
    ///                 .output("critic"),
    ///         )
    ///         .build()
    /// };
    /// let ctx = RunContext::new();
    /// assert_eq!(team()?.run_task("a poem", &ctx).await?.final_text(), "APPROVE");
    /// let answered = team()?.with_answer(["writer"])?;
    /// assert_eq!(answered.answering().collect::<Vec<_>>(), ["writer"]);
    /// assert_eq!(answered.run_task("a poem", &ctx).await?.final_text(), "a poem");
    /// assert!(team()?.with_answer(["editor"]).is_err());
    /// let shared = team()?;
    /// let _clone = shared.clone();
    /// assert!(shared.with_answer(["writer"]).is_err());
    /// # Ok(()) }
    /// ```
    pub fn with_answer<S: Into<String>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Workflow, BuildError> {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let flags = answer_flags(&self.spec.names, names)?;
        let Some(spec) = Arc::get_mut(&mut self.spec) else {
            return Err(BuildError::SharedWorkflow(self.spec.name.clone()));
        };
        spec.answer = flags;
        Ok(self)
    }

    /// The participants whose messages answer for the workflow (see
    /// [`WorkflowBuilder::answer`]); empty when the last message does.
    pub fn answering(&self) -> impl Iterator<Item = &str> {
        self.spec
            .names
            .iter()
            .enumerate()
            .filter(|(i, _)| self.spec.answer.get(*i).copied().unwrap_or(false))
            .map(|(_, n)| &**n)
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
    max_history: Option<usize>,
    store: Option<Arc<dyn CheckpointStore>>,
    durability: Option<Durability>,
    checkpoint_every: Option<u64>,
    reuse_actors: Option<bool>,
    answer: Vec<String>,
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

    /// Keeps at most the last `n` messages in each thread of a run — the
    /// run thread, each participant's (or shared group's) — and in the
    /// result's [`messages`](crate::RunResult::messages), so a long run
    /// holds a bounded history (by default it keeps everything).
    ///
    /// While the run goes on, a thread may grow to `n + n/4` before its
    /// oldest messages go (so that letting go costs nothing per message);
    /// the result holds `n`. Participants see what is kept; checkpoints
    /// store it. `n` of 0 counts as 1.
    pub fn max_history(mut self, n: usize) -> Self {
        self.max_history = Some(n.max(1));
        self
    }

    /// Saves checkpoints of top-level runs in `store`: after every
    /// superstep of a graph, and when a run ends (completed, stopped,
    /// cancelled, waiting for input).
    pub fn checkpoint_store(mut self, store: Arc<dyn CheckpointStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// How durable the checkpoints are, overriding the store's own
    /// ([`CheckpointStore::durability`]): with [`Durability::Exit`] a run
    /// saves one checkpoint, when it stops. The store decides how it
    /// writes (`Fsync` is set on the store: [`crate::store::FileStore::with_durability`],
    /// `SqliteStore::with_durability`).
    pub fn checkpoint_durability(mut self, durability: Durability) -> Self {
        self.durability = Some(durability);
        self
    }

    /// Also saves a checkpoint once `n` messages have been delivered since
    /// the last one, whenever no turn is under way (router-only and dataflow
    /// runs, which have no supersteps).
    pub fn checkpoint_every(mut self, n: u64) -> Self {
        self.checkpoint_every = Some(n.max(1));
        self
    }

    /// Whether the runs of this workflow share one actor per participant
    /// (default `true`). Spawning an actor costs more than a turn and its
    /// mailbox about 14 KiB, so a workflow run many times — a graph per
    /// request, a team per chat message, thousands of conversations at
    /// once — runs faster and lighter on shared actors: each participant
    /// has one, spawned when a run first needs it, serving every run (each
    /// run's turns of it in order) until the workflow is dropped. Turn it
    /// off for a huge fan-out run rarely, whose idle actors would hold
    /// memory between runs: each run then spawns its own, and stops them
    /// when it ends.
    pub fn reuse_actors(mut self, reuse: bool) -> Self {
        self.reuse_actors = Some(reuse);
        self
    }

    /// Makes participant `name` an answering agent: the run's final
    /// response ([`RunResult::final_response`](crate::RunResult::final_response))
    /// is the last message an answering agent produced, not simply the
    /// last message of the run (the default, when none is named). Call it
    /// again to name several; a run in which none of them spoke has no
    /// final response.
    pub fn answer(mut self, name: impl Into<String>) -> Self {
        self.answer.push(name.into());
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
        // A router alone names its results (`output`): they answer for the
        // workflow unless answering agents are named.
        let router_answers = self.graph.is_none() && self.answer.is_empty();
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
        if self.graph.is_some() {
            refuse_batching_in_graph(&router, &names)?;
        }

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
        for (i, policy) in retries.iter().enumerate() {
            if policy.as_ref().is_some_and(|p| p.max_attempts == 0) {
                return Err(BuildError::ZeroAttempts {
                    agent: names[i].to_string(),
                });
            }
        }
        if let Some(stop) = &self.stop {
            refuse_zero_limits(stop)?;
        }
        let mut answer = self.answer;
        if router_answers {
            answer = router.outputs().to_vec();
        }
        let answer = answer_flags(&names, answer)?;
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
        let mut slot_used = vec![false; slot_names.len()];
        for &s in &slot_of {
            slot_used[s] = true;
        }
        let mut participants_by_name: Vec<usize> = (0..names.len()).collect();
        participants_by_name.sort_unstable_by(|&a, &b| names[a].cmp(&names[b]));
        let mut slots_by_name: Vec<usize> =
            (0..slot_used.len()).filter(|&s| slot_used[s]).collect();
        slots_by_name.sort_unstable_by(|&a, &b| slot_names[a].cmp(&slot_names[b]));
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
                durability: self.durability,
                checkpoint_every: self.checkpoint_every,
                name,
                description: self.description,
                agents: self.agents,
                names,
                participants_by_name,
                router,
                slot_of,
                slot_names,
                slots_by_name,
                stop: self.stop,
                retries,
                inputs,
                graph: self.graph,
                edge_delivery,
                max_concurrency: self.max_concurrency,
                max_history: self.max_history,
                pool: self.reuse_actors.unwrap_or(true).then(ActorPool::default),
                child_paths: ChildPaths::default(),
                answer,
            }),
        })
    }
}

/// Which participants answer for the workflow (`names`, by index): none
/// flagged when `answer` is empty; an unknown name is an error.
/// The names are indexed once: a search of them per answering agent was
/// quadratic, 22 s to build a workflow of 100,000 outputs.
fn answer_flags(names: &[Arc<str>], answer: Vec<String>) -> Result<Vec<bool>, BuildError> {
    let mut flags = Vec::new();
    if answer.is_empty() {
        return Ok(flags);
    }
    // The first of equal names, as a search from the front finds.
    let mut index = std::collections::HashMap::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        index.entry(&**n).or_insert(i);
    }
    for agent in answer {
        let Some(&i) = index.get(agent.as_str()) else {
            return Err(BuildError::UnknownParticipant {
                option: "answer".into(),
                agent,
            });
        };
        flags.resize(names.len(), false);
        flags[i] = true;
    }
    Ok(flags)
}

/// Refuses a `max_messages(0)` or `max_turns(0)` anywhere in `stop`: the
/// run would stop before its first turn, which is never what was meant.
fn refuse_zero_limits(stop: &StopCondition) -> Result<(), BuildError> {
    match stop {
        StopCondition::MaxMessages(0)
        | StopCondition::MaxTurns(0)
        | StopCondition::TurnCeiling { turns: 0, .. } => Err(BuildError::ZeroStopLimit {
            condition: stop.to_string(),
        }),
        StopCondition::Any(all) | StopCondition::All(all) => {
            all.iter().try_for_each(refuse_zero_limits)
        }
        _ => Ok(()),
    }
}

/// A graph decides when its nodes run and each turn reads its node's whole
/// inbox, so an inbox's batch size and max wait cannot apply there: a
/// graph whose router sets them is refused rather than silently ignoring
/// them. (Sender filter, time-to-live, capacity and overflow do apply.)
fn refuse_batching_in_graph(router: &Router, names: &[Arc<str>]) -> Result<(), BuildError> {
    for (i, name) in names.iter().enumerate() {
        let Some(config) = router.inbox_config(i) else {
            continue;
        };
        let setting = if config.batch_size > 1 {
            "batch_size"
        } else if config.max_wait.is_some() {
            "max_wait"
        } else {
            continue;
        };
        return Err(BuildError::InboxSettingInGraph {
            agent: name.to_string(),
            setting,
        });
    }
    Ok(())
}
