//! Participants: agents and named workflows (built once each), agents on
//! other cluster nodes, and nodes that record what their participant
//! produced for templates and conditions.

use std::sync::Arc;

use async_trait::async_trait;
use troupe_cluster::{Placement, RemoteAgent, Selection};
use troupe_runtime::{Agent, AgentError, Reply, RunContext, Thread};

use super::built::build_nested;
use super::ctx::{BoxFuture, Ctx, build_error};
use crate::error::ConfigError;
use crate::refs::{ref_id, split_ref};
use crate::schema::PlacementSpec;
use crate::template::StepRecord;
use crate::tree::FieldPath;

impl Ctx<'_> {
    /// An agent or named workflow, built once.
    pub(super) fn participant<'s>(
        &'s mut self,
        name: &'s str,
    ) -> BoxFuture<'s, Result<Arc<dyn Agent>, ConfigError>> {
        Box::pin(async move {
            if let Some(a) = self.agents.get(name).or_else(|| self.workflows.get(name)) {
                return Ok(a.clone());
            }
            if let Some(spec) = self.config.spec().agents.get(name) {
                self.used.insert(format!("agents.{name}"));
                self.building_agents.push(name.to_string());
                let built = self.agent(name, spec).await;
                self.building_agents.pop();
                let agent = match built {
                    Ok(a) => a,
                    // Checking starts and connects to nothing, so whatever
                    // fails is the config's fault: placed at the agent.
                    Err(ConfigError::Build(m)) if self.options.check => {
                        return Err(self.invalid(&FieldPath::root().key("agents").key(name), m));
                    }
                    Err(e) => return Err(e),
                };
                self.agents.insert(name.to_string(), agent.clone());
                return Ok(agent);
            }
            if self.config.spec().workflows.contains_key(name) {
                let built = self.named_workflow(name).await?;
                self.workflows.insert(name.to_string(), built.clone());
                return Ok(built);
            }
            Err(build_error(format!("unknown agent or workflow `{name}`")))
        })
    }

    /// Named workflow `name`: inline, or the workflow of the file it names.
    async fn named_workflow(&mut self, name: &str) -> Result<Arc<dyn Agent>, ConfigError> {
        let config = self.config;
        let Some(w) = config.spec().workflows.get(name) else {
            return Err(build_error(format!("unknown workflow `{name}`")));
        };
        if self.building.iter().any(|b| b == name) {
            return Err(self.invalid(
                &FieldPath::root().key("workflows").key(name),
                format!(
                    "workflow `{name}` contains itself ({} -> {name})",
                    self.building.join(" -> ")
                ),
            ));
        }
        self.building.push(name.to_string());
        let built: Arc<dyn Agent> = match (&w.file, config.nested(name)) {
            (Some(_), Some(inner)) => {
                let options = self.options.clone();
                let inner = inner.clone();
                let here = self.here.clone();
                let built = Box::pin(build_nested(inner, options, name.to_string(), here)).await?;
                self.mcp.extend(built.mcp);
                self.notes.extend(built.notes);
                self.warnings.extend(built.warnings);
                Arc::new(built.workflow)
            }
            (Some(file), None) => {
                return Err(build_error(format!(
                    "workflow `{name}`: `{file}` was not loaded"
                )));
            }
            (None, _) => Arc::new(self.workflow(name, w, None).await?),
        };
        self.building.pop();
        Ok(built)
    }

    /// A participant as a workflow names it: `agent`, or `agent@node`. An
    /// agent on another node (by the reference, or by its `node:`) is a
    /// [`RemoteAgent`] under the agent's own name, unless that node is the
    /// one being built for.
    pub(super) async fn participant_ref(
        &mut self,
        reference: &str,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let (agent, node) = split_ref(reference).ok_or_else(|| {
            build_error(format!(
                "`{reference}` is not a valid `agent@node` reference"
            ))
        })?;
        let node = node.map(str::to_string).or_else(|| {
            self.config
                .spec()
                .agents
                .get(agent)
                .and_then(|a| a.node.clone())
        });
        match node {
            Some(n) if self.here.as_deref() != Some(n.as_str()) => {
                self.remote(agent, Placement::Node(n), 0)
            }
            _ => self.participant(agent).await,
        }
    }

    /// Agent `agent` hosted by other nodes, described as the config
    /// describes it (a selector reads the description, a swarm the
    /// handoffs: neither crosses the wire).
    fn remote(
        &mut self,
        agent: &str,
        placement: Placement,
        failover: u32,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        self.used.insert(format!("agents.{agent}"));
        let mut remote = RemoteAgent::new(agent)
            .map_err(|e| build_error(format!("agent `{agent}`: {e}")))?
            .placement_of(placement)
            .failover(failover);
        if let Some(spec) = self.config.spec().agents.get(agent) {
            // Its model is used where it is hosted.
            if let Some(model) = &spec.model {
                self.used.insert(format!("models.{model}"));
            }
            remote = remote
                .description(spec.description.clone().unwrap_or_default())
                .handoffs(spec.handoffs.iter().cloned());
        }
        Ok(Arc::new(remote))
    }

    /// A map-reduce's worker as a node: one remote agent for every
    /// sub-task when the workers spread over the nodes hosting the worker
    /// (their turns take turns over those nodes), else the worker itself.
    pub(super) async fn worker(
        &mut self,
        worker: &str,
        placement: Option<PlacementSpec>,
        failover: Option<u32>,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let selection = match placement.unwrap_or_default() {
            PlacementSpec::Local => return self.node(ref_id(worker), worker).await,
            PlacementSpec::Spread => Selection::RoundRobin,
            PlacementSpec::LeastBusy => Selection::LeastBusy,
        };
        let id = ref_id(worker);
        let remote = self.remote(id, Placement::Any(selection), failover.unwrap_or(0))?;
        Ok(self.record(id, id, remote))
    }

    /// A node running `target` (a participant reference) as `id`,
    /// recording its outputs.
    pub(super) async fn node(
        &mut self,
        id: &str,
        target: &str,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let inner = self.participant_ref(target).await?;
        Ok(self.record(id, ref_id(target), inner))
    }

    /// `inner` (agent `agent`) as node `id`, recording its outputs.
    fn record(&self, id: &str, agent: &str, inner: Arc<dyn Agent>) -> Arc<dyn Agent> {
        // ChatAgent does not report its handoff targets through
        // `Agent::handoffs` (swarms need them): the config knows them.
        let handoffs = match self.config.spec().agents.get(agent) {
            Some(a) => a.handoffs.clone(),
            None => inner.handoffs(),
        };
        // A chat agent knows its own messages by its name: under another
        // id, it is shown them under its name.
        let rename = id != agent && self.config.spec().agents.contains_key(agent);
        Arc::new(Recorder {
            name: id.to_string(),
            agent: agent.to_string(),
            inner,
            handoffs,
            rename,
        })
    }

    /// Participants by reference, each under its id (the agent's name).
    pub(super) async fn nodes(
        &mut self,
        names: &[String],
    ) -> Result<Vec<Arc<dyn Agent>>, ConfigError> {
        let mut out = Vec::new();
        for n in names {
            out.push(self.node(ref_id(n), n).await?);
        }
        Ok(out)
    }
}

/// A participant under its node (or step) id that records what it
/// produced in the run's state (its reply's state delta), for templates
/// and conditions.
struct Recorder {
    name: String,
    agent: String,
    inner: Arc<dyn Agent>,
    handoffs: Vec<String>,
    /// Whether the agent runs under an id other than its name (a step
    /// `draft` run by agent `writer`).
    rename: bool,
}

impl Recorder {
    /// `thread` as the agent sees it: the messages this node produced
    /// under its id are its own, under its name (so its model is shown
    /// them as its earlier answers). The same thread if there are none.
    fn as_seen(&self, thread: Arc<Thread>) -> Arc<Thread> {
        if !self.rename || !thread.messages().iter().any(|m| *m.source == *self.name) {
            return thread;
        }
        let agent: Arc<str> = Arc::from(self.agent.as_str());
        let mut seen = Thread::new();
        for m in thread.messages() {
            if *m.source == *self.name {
                let mut own = (**m).clone();
                own.source = agent.clone();
                seen.push(own);
            } else {
                seen.push_shared(m.clone());
            }
        }
        Arc::new(seen)
    }
}

#[async_trait]
impl Agent for Recorder {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn handoffs(&self) -> Vec<String> {
        self.handoffs.clone()
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let mut reply = self.inner.run(self.as_seen(thread), ctx).await?;
        if let Some(last) = reply.messages().last() {
            let record = StepRecord::new(self.agent.clone(), last.text_content());
            reply = reply.with_state_delta(record.delta(&self.name));
        }
        Ok(reply)
    }
}
