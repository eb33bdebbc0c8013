//! From a checked config to a running [`Workflow`]: model clients (or
//! scripts), tools (built-in ones and MCP servers), agents, nested
//! workflows, and the checkpoint store.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use troupe_agents::{
    ChatAgent, ChatModel, ChatRequest, ChatResponse, ChatStream, McpClient, McpServerConfig,
    ModelError, OpenAiClient, ScriptedModel, ScriptedReply, Tool,
};
use troupe_presets::{
    MapReduce, RoundRobinGroupChat, SelectorGroupChat, Sequential, StepFlow, Swarm,
};
use troupe_runtime::cluster::{Placement, RemoteAgent, Selection};
use troupe_runtime::store::{CheckpointStore, FileStore, MemoryStore, ThreadStore};
use troupe_runtime::{
    Agent, AgentError, Backoff, ErrorKind, Graph, InboxConfig, Isolation, Join, NodeInput,
    Overflow, Reply, RetryPolicy, RouterBuilder, RunContext, Scheduler, StopCondition, Thread,
    Workflow,
};

use super::env::expand;
use super::error::ConfigError;
use super::plan::Plan;
use super::remote::{ref_id, split_ref};
use super::schema::{
    AgentSpec, BackoffSpec, ErrorKindSpec, Exhausted, FlowSpec, InputSpec, IsolationSpec, JoinSpec,
    ModelSpec, OverflowSpec, PlacementSpec, Provider, ReplyForm, ReplySpec, RetrySpec,
    SchedulerSpec, StopSpec, StoreKind, ToolSpec, WorkflowSpec,
};
use super::template::{Board, Template};
use super::validate::parallel_blocks;
use super::{Config, tools};

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Run every `auto` model scripted, even when an endpoint is configured.
    pub offline: bool,
    /// What `${TROUPE_EXE}` expands to (default: `$TROUPE_EXE`, else the
    /// running executable).
    pub troupe_exe: Option<PathBuf>,
}

/// The checkpoint store, as both the engine's checkpoint store and the
/// chat sessions' thread store.
#[derive(Clone)]
pub struct Store {
    /// Where runs checkpoint.
    pub checkpoints: Arc<dyn CheckpointStore>,
    /// Where chat conversations are kept.
    pub threads: Arc<dyn ThreadStore>,
    /// Which kind.
    pub kind: StoreKind,
    /// The directory or database file, for `dir` and `sqlite`.
    pub location: Option<PathBuf>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("kind", &self.kind)
            .field("location", &self.location)
            .finish()
    }
}

impl Store {
    /// Opens the store a config describes (creating its directory).
    pub fn open(kind: StoreKind, location: Option<PathBuf>) -> Result<Store, ConfigError> {
        let fail = |e: &dyn fmt::Display| ConfigError::Build(format!("checkpoint store: {e}"));
        fn both<S: CheckpointStore + ThreadStore + 'static>(
            s: S,
        ) -> (Arc<dyn CheckpointStore>, Arc<dyn ThreadStore>) {
            let s = Arc::new(s);
            (s.clone(), s)
        }
        let (checkpoints, threads) = match (kind, &location) {
            (StoreKind::Memory, _) => both(MemoryStore::new()),
            (StoreKind::Dir, Some(dir)) => both(FileStore::open(dir).map_err(|e| fail(&e))?),
            (StoreKind::Sqlite, Some(file)) => {
                if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
                }
                both(troupe_runtime::store::SqliteStore::open(file).map_err(|e| fail(&e))?)
            }
            (_, None) => return Err(fail(&"a `dir` or `sqlite` store needs a path")),
        };
        Ok(Store {
            checkpoints,
            threads,
            kind,
            location,
        })
    }
}

/// A built config: the workflow and what it needs kept alive.
#[derive(Debug)]
pub struct Built {
    /// The workflow (an agent: run it, stream it, nest it).
    pub workflow: Workflow,
    /// The checkpoint store, if the config has one (already attached to
    /// the workflow).
    pub store: Option<Store>,
    /// What the steps produced, for `{{ $steps… }}` templates. Shared by
    /// the workflow's runs: run one at a time, or build once per run.
    pub board: Board,
    /// How each model was resolved (`main: openai gpt-4o-mini at …`,
    /// `main: scripted (offline)`).
    pub notes: Vec<String>,
    /// MCP connections (closed when dropped, or by [`Built::close`]).
    pub mcp: Vec<McpClient>,
}

impl Built {
    /// Closes the MCP connections (their child processes exit).
    pub async fn close(&self) {
        for c in &self.mcp {
            c.close().await;
        }
    }
}

/// The agents a cluster node hosts, built from a config
/// ([`Config::build_hosted`]), and what they need kept alive.
pub struct Hosted {
    /// The agents (and named workflows), in the order asked for.
    pub agents: Vec<Arc<dyn Agent>>,
    /// How each model was resolved (as [`Built::notes`]).
    pub notes: Vec<String>,
    /// MCP connections (closed when dropped, or by [`Hosted::close`]).
    pub mcp: Vec<McpClient>,
}

impl fmt::Debug for Hosted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosted")
            .field(
                "agents",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("notes", &self.notes)
            .field("mcp", &self.mcp)
            .finish()
    }
}

impl Hosted {
    /// Closes the MCP connections (their child processes exit).
    pub async fn close(&self) {
        for c in &self.mcp {
            c.close().await;
        }
    }
}

fn build_error(what: impl fmt::Display) -> ConfigError {
    ConfigError::Build(what.to_string())
}

pub(crate) async fn build(config: &Config, options: &BuildOptions) -> Result<Built, ConfigError> {
    let store = match &config.spec.checkpoint {
        Some(cp) => Some(Store::open(
            cp.store,
            cp.path.as_deref().map(|p| config.resolve_path(p)),
        )?),
        None => None,
    };
    let mut ctx = Ctx::new(config, options, None);
    let name = config.workflow_name();
    let workflow = match &config.spec.workflow {
        Some(w) => ctx.workflow(&name, w, store.as_ref()).await?,
        None => {
            // A single agent, run alone.
            let (agent_name, _) = config
                .spec
                .agents
                .iter()
                .next()
                .ok_or_else(|| build_error("the config has no workflow and no agent"))?;
            let agent = ctx.participant_ref(agent_name).await?;
            let mut b = Workflow::builder().name(name).participant_arc(agent);
            if let Some(s) = &store {
                b = b.checkpoint_store(s.checkpoints.clone());
            }
            b.build().map_err(build_error)?
        }
    };
    Ok(Built {
        workflow,
        store,
        board: ctx.board.clone(),
        notes: ctx.notes,
        mcp: ctx.mcp,
    })
}

pub(crate) async fn build_hosted(
    config: &Config,
    names: &[String],
    node: &str,
    options: &BuildOptions,
) -> Result<Hosted, ConfigError> {
    let mut ctx = Ctx::new(config, options, Some(node.to_string()));
    let mut agents = Vec::with_capacity(names.len());
    for name in names {
        agents.push(ctx.participant(name).await?);
    }
    Ok(Hosted {
        agents,
        notes: ctx.notes,
        mcp: ctx.mcp,
    })
}

/// What building one config file needs.
struct Ctx<'a> {
    config: &'a Config,
    options: &'a BuildOptions,
    /// The cluster node being built for (`troupe node`): agents placed on
    /// it are built here, not called remotely. `None` for a workflow run.
    here: Option<String>,
    board: Board,
    agents: BTreeMap<String, Arc<dyn Agent>>,
    workflows: BTreeMap<String, Arc<dyn Agent>>,
    /// Named workflows being built (to refuse one that contains itself).
    building: Vec<String>,
    mcp: Vec<McpClient>,
    notes: Vec<String>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl<'a> Ctx<'a> {
    fn new(config: &'a Config, options: &'a BuildOptions, here: Option<String>) -> Self {
        let mut blocks = BTreeMap::new();
        for w in config
            .spec
            .workflow
            .iter()
            .chain(config.spec.workflows.values())
        {
            if let Some(steps) = &w.steps {
                parallel_blocks(steps, &mut blocks);
            }
        }
        Ctx {
            config,
            options,
            here,
            board: Board::with_blocks(blocks),
            agents: BTreeMap::new(),
            workflows: BTreeMap::new(),
            building: Vec::new(),
            mcp: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn env(&self, name: &str) -> Option<String> {
        if name == "TROUPE_EXE" {
            return std::env::var("TROUPE_EXE").ok().or_else(|| {
                self.options
                    .troupe_exe
                    .clone()
                    .or_else(|| std::env::current_exe().ok())
                    .map(|p| p.to_string_lossy().into_owned())
            });
        }
        std::env::var(name).ok()
    }

    fn expand(&self, what: &str, text: &str) -> Result<String, ConfigError> {
        expand(text, &|k| self.env(k)).map_err(|e| build_error(format!("{what}: {e}")))
    }

    /// An agent or named workflow, built once.
    fn participant<'s>(
        &'s mut self,
        name: &'s str,
    ) -> BoxFuture<'s, Result<Arc<dyn Agent>, ConfigError>> {
        Box::pin(async move {
            if let Some(a) = self.agents.get(name).or_else(|| self.workflows.get(name)) {
                return Ok(a.clone());
            }
            if let Some(spec) = self.config.spec.agents.get(name) {
                let agent = self.agent(name, spec).await?;
                self.agents.insert(name.to_string(), agent.clone());
                return Ok(agent);
            }
            if let Some(w) = self.config.spec.workflows.get(name) {
                if self.building.iter().any(|b| b == name) {
                    return Err(build_error(format!(
                        "workflow `{name}` contains itself ({} -> {name})",
                        self.building.join(" -> ")
                    )));
                }
                self.building.push(name.to_string());
                let built: Arc<dyn Agent> = match (&w.file, self.config.nested(name)) {
                    (Some(_), Some(inner)) => {
                        let options = self.options.clone();
                        let inner = inner.clone();
                        let name = name.to_string();
                        let here = self.here.clone();
                        let built = Box::pin(build_nested(inner, options, name, here)).await?;
                        self.mcp.extend(built.mcp);
                        self.notes.extend(built.notes);
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
                self.workflows.insert(name.to_string(), built.clone());
                return Ok(built);
            }
            Err(build_error(format!("unknown agent or workflow `{name}`")))
        })
    }

    fn model_spec(&self, name: &str) -> Result<&'a ModelSpec, ConfigError> {
        self.config
            .spec
            .models
            .get(name)
            .ok_or_else(|| build_error(format!("unknown model `{name}`")))
    }

    /// Whether a model runs against a server.
    fn online(&self, spec: &ModelSpec) -> bool {
        match spec.provider {
            Provider::Openai => true,
            Provider::Scripted => false,
            Provider::Auto => {
                let key = spec.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                !self.options.offline
                    && (self.env("OPENAI_BASE_URL").is_some_and(|v| !v.is_empty())
                        || self.env(key).is_some_and(|v| !v.is_empty()))
            }
        }
    }

    /// A model for `user` (an agent or the selector): a client, or a
    /// script (the agent's own, else the model's).
    fn model(
        &mut self,
        model_name: &str,
        user: &str,
        script: Option<&Vec<ReplySpec>>,
    ) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let spec = self.model_spec(model_name)?;
        if self.online(spec) {
            let client = self.openai(model_name, spec)?;
            return Ok(client);
        }
        let replies: Vec<ReplyForm> = script
            .or(spec.replies.as_ref())
            .map(|r| r.iter().map(|r| r.0.clone()).collect())
            .ok_or_else(|| {
                build_error(format!(
                    "`{user}` has no scripted replies for model `{model_name}`"
                ))
            })?;
        self.notes.push(format!(
            "{user}: model `{model_name}` scripted ({} replies{})",
            replies.len(),
            if spec.provider == Provider::Auto {
                ", offline"
            } else {
                ""
            }
        ));
        Ok(Arc::new(Scripted::new(
            format!("{model_name}:{user}"),
            replies,
            spec.when_exhausted.unwrap_or_default(),
            spec.delay.as_ref().map(|d| d.duration),
        )))
    }

    fn openai(&mut self, name: &str, spec: &ModelSpec) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let what = format!("model `{name}`");
        let model = self.expand(&what, spec.model.as_deref().unwrap_or("gpt-4o-mini"))?;
        let mut b = OpenAiClient::builder(model.clone());
        let base = match &spec.base_url {
            Some(u) => Some(self.expand(&what, u)?),
            None => self.env("OPENAI_BASE_URL").filter(|v| !v.is_empty()),
        };
        if let Some(u) = &base {
            b = b.base_url(u.clone());
        }
        let key_var = spec.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
        if let Some(key) = self.env(key_var).filter(|k| !k.is_empty()) {
            b = b.api_key(key);
        }
        for (k, v) in &spec.headers {
            b = b.header(k.clone(), self.expand(&what, v)?);
        }
        if let Some(t) = &spec.timeout {
            b = b.timeout(t.duration);
        }
        if let Some(n) = spec.retries {
            b = b.retry(troupe_agents::RetryPolicy::new(
                n,
                Duration::from_millis(500),
            ));
        }
        let client = b.build().map_err(|e| build_error(format!("{what}: {e}")))?;
        self.notes
            .push(format!("model `{name}`: {model} at {}", client.endpoint()));
        Ok(Arc::new(client))
    }

    async fn tools(
        &mut self,
        agent: &str,
        spec: &AgentSpec,
    ) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
        let mut out = Vec::new();
        for t in &spec.tools {
            match t {
                ToolSpec::Calculator | ToolSpec::CurrentTime | ToolSpec::WordCount => {
                    let name = match t {
                        ToolSpec::Calculator => "calculator",
                        ToolSpec::CurrentTime => "current_time",
                        _ => "word_count",
                    };
                    out.extend(tools::builtin_tool(name));
                }
                ToolSpec::Mcp(m) => {
                    let what = format!("agent `{agent}`: MCP server");
                    let name = m.name.clone().unwrap_or_else(|| "mcp".into());
                    let mut cfg = match (&m.command, &m.url) {
                        (Some(cmd), _) => {
                            let mut c =
                                McpServerConfig::stdio(name.clone(), self.expand(&what, cmd)?);
                            for a in &m.args {
                                c = c.arg(self.expand(&what, a)?);
                            }
                            for (k, v) in &m.env {
                                c = c.env(k.clone(), self.expand(&what, v)?);
                            }
                            if let Some(dir) = &m.cwd {
                                c = c.current_dir(
                                    self.config.resolve_path(&self.expand(&what, dir)?),
                                );
                            }
                            c
                        }
                        (None, Some(url)) => {
                            let mut c =
                                McpServerConfig::http(name.clone(), self.expand(&what, url)?);
                            for (k, v) in &m.headers {
                                c = c.header(k.clone(), self.expand(&what, v)?);
                            }
                            c
                        }
                        (None, None) => {
                            return Err(build_error(format!("{what} has no command or url")));
                        }
                    };
                    if let Some(allow) = &m.tools {
                        cfg = cfg.allow(allow.clone());
                    }
                    if let Some(p) = &m.prefix {
                        cfg = cfg.tool_prefix(p.clone());
                    }
                    if let Some(t) = &m.timeout {
                        cfg = cfg.timeout(t.duration);
                    }
                    let client = McpClient::connect(cfg)
                        .await
                        .map_err(|e| build_error(format!("{what} `{name}`: {e}")))?;
                    let tools = client
                        .tools()
                        .await
                        .map_err(|e| build_error(format!("{what} `{name}`: {e}")))?;
                    out.extend(tools.into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>));
                    self.mcp.push(client);
                }
            }
        }
        Ok(out)
    }

    async fn agent(&mut self, name: &str, spec: &AgentSpec) -> Result<Arc<dyn Agent>, ConfigError> {
        let model = self.model(&spec.model, name, spec.script.as_ref())?;
        let model_spec = self.model_spec(&spec.model)?;
        let tools = self.tools(name, spec).await?;
        let recipe = Arc::new(Recipe {
            name: name.to_string(),
            description: spec.description.clone().unwrap_or_default(),
            model,
            tools,
            handoffs: spec.handoffs.clone(),
            max_tool_iterations: spec.max_tool_iterations,
            structured: spec.structured_output.clone(),
            temperature: spec.temperature.or(model_spec.temperature),
            max_tokens: spec.max_tokens.or(model_spec.max_tokens),
            tool_timeout: spec.tool_timeout.as_ref().map(|d| d.duration),
        });
        let template = match &spec.instructions {
            Some(text) => Some(
                Template::parse(text).map_err(|e| build_error(format!("agent `{name}`: {e}")))?,
            ),
            None => None,
        };
        match template {
            Some(t) if t.has_references() => {
                // Checked once here, so a turn cannot fail on the recipe.
                recipe
                    .build(Some(String::new()))
                    .map_err(|e| build_error(format!("agent `{name}`: {e}")))?;
                Ok(Arc::new(Templated {
                    recipe,
                    template: t,
                    board: self.board.clone(),
                }))
            }
            _ => {
                Ok(Arc::new(recipe.build(spec.instructions.clone()).map_err(
                    |e| build_error(format!("agent `{name}`: {e}")),
                )?))
            }
        }
    }

    /// A participant as a workflow names it: `agent`, or `agent@node`. An
    /// agent on another node (by the reference, or by its `node:`) is a
    /// [`RemoteAgent`] under the agent's own name, unless that node is the
    /// one being built for.
    async fn participant_ref(&mut self, reference: &str) -> Result<Arc<dyn Agent>, ConfigError> {
        let (agent, node) = split_ref(reference).ok_or_else(|| {
            build_error(format!(
                "`{reference}` is not a valid `agent@node` reference"
            ))
        })?;
        let node = node.map(str::to_string).or_else(|| {
            self.config
                .spec
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
        &self,
        agent: &str,
        placement: Placement,
        failover: u32,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let mut remote = RemoteAgent::new(agent)
            .map_err(|e| build_error(format!("agent `{agent}`: {e}")))?
            .placement_of(placement)
            .failover(failover);
        if let Some(spec) = self.config.spec.agents.get(agent) {
            remote = remote
                .description(spec.description.clone().unwrap_or_default())
                .handoffs(spec.handoffs.iter().cloned());
        }
        Ok(Arc::new(remote))
    }

    /// A node running `target` (a participant reference) as `id`,
    /// recording its outputs.
    async fn node(&mut self, id: &str, target: &str) -> Result<Arc<dyn Agent>, ConfigError> {
        let inner = self.participant_ref(target).await?;
        Ok(self.record(id, ref_id(target), inner))
    }

    /// `inner` (agent `agent`) as node `id`, recording its outputs.
    fn record(&self, id: &str, agent: &str, inner: Arc<dyn Agent>) -> Arc<dyn Agent> {
        // ChatAgent does not report its handoff targets through
        // `Agent::handoffs` (swarms need them): the config knows them.
        let handoffs = match self.config.spec.agents.get(agent) {
            Some(a) => a.handoffs.clone(),
            None => inner.handoffs(),
        };
        Arc::new(Recorder {
            name: id.to_string(),
            agent: agent.to_string(),
            inner,
            handoffs,
            board: self.board.clone(),
        })
    }

    /// Participants by reference, each under its id (the agent's name).
    async fn nodes(&mut self, names: &[String]) -> Result<Vec<Arc<dyn Agent>>, ConfigError> {
        let mut out = Vec::new();
        for n in names {
            out.push(self.node(ref_id(n), n).await?);
        }
        Ok(out)
    }

    /// Builds a workflow section; `store` is given for the main workflow.
    fn workflow<'s>(
        &'s mut self,
        name: &'s str,
        w: &'s WorkflowSpec,
        store: Option<&'s Store>,
    ) -> BoxFuture<'s, Result<Workflow, ConfigError>> {
        Box::pin(async move {
            let stop = stop_condition(w.stop.as_ref(), w.max_turns);
            let description = w
                .description
                .clone()
                .or_else(|| self.config.spec.description.clone())
                .unwrap_or_default();
            let preset = |r: Result<Workflow, troupe_presets::PresetError>| r.map_err(build_error);
            let team: Option<Workflow> = if let Some(t) = &w.round_robin {
                let mut b = RoundRobinGroupChat::builder()
                    .name(name)
                    .description(description.clone())
                    .participants(self.nodes(&t.participants).await?);
                if let Some(s) = stop.clone() {
                    b = b.stop_condition(s);
                }
                Some(preset(b.build())?)
            } else if let Some(s) = &w.selector {
                let model = self.model(&s.model, "selector", None)?;
                let mut b = SelectorGroupChat::builder()
                    .name(name)
                    .description(description.clone())
                    .participants(self.nodes(&s.participants).await?)
                    .model(model);
                if let Some(p) = &s.prompt {
                    b = b.prompt(p.clone());
                }
                if let Some(a) = s.allow_repeated_speaker {
                    b = b.allow_repeated_speaker(a);
                }
                if let Some(n) = s.max_selector_attempts {
                    b = b.max_selector_attempts(n);
                }
                if let Some(st) = stop.clone() {
                    b = b.stop_condition(st);
                }
                Some(preset(b.build())?)
            } else if let Some(t) = &w.swarm {
                let mut b = Swarm::builder()
                    .name(name)
                    .description(description.clone())
                    .participants(self.nodes(&t.participants).await?);
                if let Some(s) = stop.clone() {
                    b = b.stop_condition(s);
                }
                Some(preset(b.build())?)
            } else if let Some(s) = &w.sequential {
                let mut b = Sequential::builder()
                    .name(name)
                    .description(description.clone())
                    .participants(self.nodes(&s.participants).await?)
                    .flow(match s.flow {
                        None | Some(FlowSpec::AllPrior) => StepFlow::AllPrior,
                        Some(FlowSpec::Previous) => StepFlow::Previous,
                        Some(FlowSpec::PriorOutputs) => StepFlow::PriorOutputs,
                    });
                if let Some(st) = stop.clone() {
                    b = b.stop_condition(st);
                }
                Some(preset(b.build())?)
            } else if let Some(m) = &w.map_reduce {
                let mapper = self.node(ref_id(&m.mapper), &m.mapper).await?;
                let selection = match m.placement.unwrap_or_default() {
                    PlacementSpec::Local => None,
                    PlacementSpec::Spread => Some(Selection::RoundRobin),
                    PlacementSpec::LeastBusy => Some(Selection::LeastBusy),
                };
                let worker = match selection {
                    None => self.node(ref_id(&m.worker), &m.worker).await?,
                    // One remote agent for every sub-task: their turns
                    // take turns over the nodes hosting the worker.
                    Some(s) => {
                        let id = ref_id(&m.worker);
                        let remote = self.remote(id, Placement::Any(s), m.failover.unwrap_or(0))?;
                        self.record(id, id, remote)
                    }
                };
                let reducer = self.node(ref_id(&m.reducer), &m.reducer).await?;
                let mut b = MapReduce::builder()
                    .name(name)
                    .description(description.clone())
                    .mapper(mapper)
                    .worker_arc(worker)
                    .reducer(reducer);
                if let Some(i) = m.isolation {
                    b = b.isolation(isolation(i));
                }
                if let Some(n) = m.max_concurrency {
                    b = b.max_concurrency(n);
                }
                if let Some(st) = stop.clone() {
                    b = b.stop_condition(st);
                }
                Some(preset(b.build())?)
            } else {
                None
            };
            if let Some(team) = team {
                // Presets build their own workflow; to checkpoint one, it
                // runs as the single participant of a workflow that has
                // the store (its state rides in that workflow's thread).
                return match store {
                    None => Ok(team),
                    Some(s) => {
                        let mut b = Workflow::builder()
                            .name(name)
                            .description(description)
                            .participant(team)
                            .checkpoint_store(s.checkpoints.clone());
                        if let Some(n) = self.config.spec.checkpoint.as_ref().and_then(|c| c.every)
                        {
                            b = b.checkpoint_every(n);
                        }
                        b.build().map_err(build_error)
                    }
                };
            }

            let mut b = Workflow::builder().name(name).description(description);
            let plan = if let Some(g) = &w.graph {
                Some((Plan::of_graph(g), g.scheduler, g.max_supersteps))
            } else {
                w.steps
                    .as_ref()
                    .map(|steps| (Plan::of_steps(steps), None, None))
            };
            if let Some((plan, scheduler, max_supersteps)) = plan {
                let mut g = Graph::builder();
                for n in &plan.nodes {
                    g = g.add_agent_arc(self.node(&n.id, &n.target).await?);
                    if let Some(j) = n.join {
                        g = g.join(n.id.clone(), join(j));
                    }
                    if let Some(i) = n.input {
                        g = g.input(n.id.clone(), input(i));
                    }
                    if let Some(f) = n.fan_out {
                        g = g.fan_out(n.id.clone(), isolation(f));
                    }
                    if let Some(r) = &n.retry {
                        g = g.retry(n.id.clone(), retry_policy(r));
                    }
                }
                for e in &plan.edges {
                    let from = plan.nodes[e.from].id.clone();
                    let to = plan.nodes[e.to].id.clone();
                    let cond = e
                        .cond
                        .runtime(&self.board)
                        .map_err(|m| build_error(format!("workflow `{name}`: {m}")))?;
                    g = match (e.is_loop, e.limit) {
                        (_, Some(limit)) => g.add_loop_with_limit(from, to, cond, limit),
                        (true, None) => g.add_loop(from, to, cond),
                        (false, None) => g.add_transition(from, to, cond),
                    };
                }
                for &s in &plan.starts {
                    g = g.start(plan.nodes[s].id.clone());
                }
                if let Some(s) = scheduler {
                    g = g.scheduler(match s {
                        SchedulerSpec::Supersteps => Scheduler::Supersteps,
                        SchedulerSpec::Dataflow => Scheduler::Dataflow,
                    });
                }
                if let Some(n) = max_supersteps {
                    g = g.max_supersteps(n);
                }
                if let Some(n) = w.max_loop_iterations {
                    g = g.loop_limit(n);
                }
                b = b.graph(
                    g.build()
                        .map_err(|e| build_error(format!("workflow `{name}`: {e}")))?,
                );
                if w.steps.is_some() && w.router.is_none() {
                    // Every step sees the task and everything produced
                    // before it (and, in a loop, the feedback that sent
                    // the flow back), as cagent injects prior outputs.
                    b = b.router(RouterBuilder::default());
                }
            }
            if let Some(r) = &w.router {
                let mut rb = RouterBuilder::default();
                if w.graph.is_none() {
                    let members: Vec<String> = match &r.participants {
                        Some(list) => list.clone(),
                        None => {
                            let mut list: Vec<String> = Vec::new();
                            for route in &r.routes {
                                for n in route.from.0.iter().chain(std::iter::once(&route.to)) {
                                    if n != troupe_runtime::USER && n != "*" && !list.contains(n) {
                                        list.push(n.clone());
                                    }
                                }
                            }
                            list
                        }
                    };
                    b = b.participants(self.nodes(&members).await?);
                }
                for route in &r.routes {
                    let mut cfg = InboxConfig::new();
                    let mut custom = false;
                    if let Some(n) = route.batch_size {
                        cfg = cfg.batch_size(n);
                        custom = true;
                    }
                    if let Some(t) = &route.ttl {
                        cfg = cfg.ttl(t.duration);
                        custom = true;
                    }
                    if let Some(n) = route.capacity {
                        cfg = cfg.capacity(n);
                        custom = true;
                    }
                    if let Some(o) = route.overflow {
                        cfg = cfg.overflow(match o {
                            OverflowSpec::DropOldest => Overflow::DropOldest,
                            OverflowSpec::DropNewest => Overflow::DropNewest,
                            OverflowSpec::Reject => Overflow::Reject,
                        });
                        custom = true;
                    }
                    if let Some(t) = &route.max_wait {
                        cfg = cfg.max_wait(t.duration);
                        custom = true;
                    }
                    let from = &route.from.0;
                    let source: troupe_router::Source = if from.iter().any(|f| f == "*") {
                        troupe_router::Source::Any
                    } else if from.len() == 1 {
                        troupe_router::Source::One(from[0].clone())
                    } else {
                        troupe_router::Source::Many(from.clone())
                    };
                    rb = if custom {
                        rb.add_route_with(source, route.to.clone(), cfg)
                    } else {
                        rb.add_route(source, route.to.clone())
                    };
                }
                for o in &r.output {
                    rb = rb.output(o.clone());
                }
                b = b.router(rb);
            }
            for (group, members) in &w.shared_threads {
                b = b.shared_thread(group.clone(), members.clone());
            }
            if let Some(s) = stop {
                b = b.stop_condition(s);
            }
            if let Some(n) = w.max_concurrency {
                b = b.max_concurrency(n);
            }
            if let Some(s) = store {
                b = b.checkpoint_store(s.checkpoints.clone());
                if let Some(n) = self.config.spec.checkpoint.as_ref().and_then(|c| c.every) {
                    b = b.checkpoint_every(n);
                }
            }
            b.build()
                .map_err(|e| build_error(format!("workflow `{name}`: {e}")))
        })
    }
}

/// Builds the workflow of a nested config file, named `name`, for node
/// `here` (if a node is being built).
async fn build_nested(
    config: Config,
    options: BuildOptions,
    name: String,
    here: Option<String>,
) -> Result<Built, ConfigError> {
    let mut ctx = Ctx::new(&config, &options, here);
    let workflow = match &config.spec.workflow {
        Some(w) => ctx.workflow(&name, w, None).await?,
        None => {
            let agent_name = config.spec.agents.keys().next().cloned().ok_or_else(|| {
                build_error(format!("`{}` has no workflow", config.path.display()))
            })?;
            let agent = ctx.participant_ref(&agent_name).await?;
            Workflow::builder()
                .name(name.clone())
                .participant_arc(agent)
                .build()
                .map_err(build_error)?
        }
    };
    Ok(Built {
        workflow,
        store: None,
        board: ctx.board.clone(),
        notes: ctx.notes,
        mcp: ctx.mcp,
    })
}

fn isolation(i: IsolationSpec) -> Isolation {
    match i {
        IsolationSpec::Fresh => Isolation::Fresh,
        IsolationSpec::Inherit => Isolation::Inherit,
    }
}

fn join(j: JoinSpec) -> Join {
    match j {
        JoinSpec::All => Join::All,
        JoinSpec::Any => Join::Any,
        JoinSpec::AllThatCanArrive => Join::AllThatCanArrive,
    }
}

fn input(i: InputSpec) -> NodeInput {
    match i {
        InputSpec::Messages => NodeInput::Messages,
        InputSpec::PriorOutputs => NodeInput::PriorOutputs,
        InputSpec::Attachments => NodeInput::Attachments,
    }
}

/// cagent counts retries after the first failure; the runtime counts
/// attempts, the first included.
pub(crate) fn retry_policy(r: &RetrySpec) -> RetryPolicy {
    let delay = r
        .delay
        .as_ref()
        .map_or(Duration::from_secs(1), |d| d.duration);
    let backoff = match r.backoff.unwrap_or(BackoffSpec::Fixed) {
        BackoffSpec::Fixed => Backoff::Fixed(delay),
        BackoffSpec::Exponential => Backoff::Exponential {
            initial: delay,
            max: r
                .max_delay
                .as_ref()
                .map_or(Duration::from_secs(30), |d| d.duration),
            factor: 2.0,
        },
    };
    RetryPolicy {
        max_attempts: r.max_attempts.saturating_add(1),
        backoff,
        retry_on: r.on.as_ref().map(|kinds| {
            kinds
                .iter()
                .map(|k| match k {
                    ErrorKindSpec::Failed => ErrorKind::Failed,
                    ErrorKindSpec::Transient => ErrorKind::Transient,
                    ErrorKindSpec::Timeout => ErrorKind::Timeout,
                    ErrorKindSpec::Model => ErrorKind::Model,
                    ErrorKindSpec::Tool => ErrorKind::Tool,
                    ErrorKindSpec::Workflow => ErrorKind::Workflow,
                    ErrorKindSpec::Node => ErrorKind::Node,
                })
                .collect()
        }),
    }
}

/// The stop condition a `stop` section (and `max_turns`) describe.
pub(crate) fn stop_condition(
    spec: Option<&StopSpec>,
    max_turns: Option<u64>,
) -> Option<StopCondition> {
    let mut any: Vec<StopCondition> = spec.map(stop_parts).unwrap_or_default();
    if let Some(n) = max_turns {
        any.push(StopCondition::max_turns(n));
    }
    match any.len() {
        0 => None,
        1 => any.pop(),
        _ => Some(StopCondition::Any(any)),
    }
}

fn stop_parts(s: &StopSpec) -> Vec<StopCondition> {
    let mut v = Vec::new();
    if let Some(n) = s.max_messages {
        v.push(StopCondition::max_messages(n));
    }
    if let Some(n) = s.max_turns {
        v.push(StopCondition::max_turns(n));
    }
    if let Some(t) = &s.text_mention {
        v.push(StopCondition::text_mention(t.clone()));
    }
    if let Some(list) = &s.source_match {
        v.push(StopCondition::source_match(list.clone()));
    }
    if let Some(t) = &s.handoff {
        v.push(StopCondition::handoff(t.clone()));
    }
    if let Some(n) = s.token_budget {
        v.push(StopCondition::token_budget(n));
    }
    if let Some(t) = &s.timeout {
        v.push(StopCondition::timeout(t.duration));
    }
    if let Some(list) = &s.all {
        let parts: Vec<StopCondition> = list
            .iter()
            .filter_map(|x| stop_condition(Some(x), None))
            .collect();
        if !parts.is_empty() {
            v.push(StopCondition::All(parts));
        }
    }
    if let Some(list) = &s.any {
        v.extend(list.iter().filter_map(|x| stop_condition(Some(x), None)));
    }
    v
}

/// What a chat agent is made of, so one with templated instructions can
/// be made afresh for each turn.
struct Recipe {
    name: String,
    description: String,
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    handoffs: Vec<String>,
    max_tool_iterations: Option<usize>,
    structured: Option<serde_json::Value>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    tool_timeout: Option<Duration>,
}

impl Recipe {
    fn build(&self, instructions: Option<String>) -> Result<ChatAgent, troupe_agents::BuildError> {
        let mut b = ChatAgent::builder(self.name.clone())
            .description(self.description.clone())
            .model_arc(self.model.clone())
            .handoffs(self.handoffs.iter().cloned());
        if let Some(i) = instructions {
            b = b.instructions(i);
        }
        for t in &self.tools {
            b = b.tool_arc(t.clone());
        }
        if let Some(n) = self.max_tool_iterations {
            b = b.max_tool_iterations(n);
        }
        if let Some(s) = &self.structured {
            b = b.structured_output(s.clone());
        }
        if let Some(t) = self.temperature {
            b = b.temperature(t);
        }
        if let Some(n) = self.max_tokens {
            b = b.max_tokens(n);
        }
        if let Some(t) = self.tool_timeout {
            b = b.tool_timeout(t);
        }
        b.build()
    }
}

/// A chat agent whose instructions hold `{{ $steps… }}` references:
/// rendered from the board at the start of each turn.
struct Templated {
    recipe: Arc<Recipe>,
    template: Template,
    board: Board,
}

#[async_trait]
impl Agent for Templated {
    fn name(&self) -> &str {
        &self.recipe.name
    }
    fn description(&self) -> &str {
        &self.recipe.description
    }
    fn handoffs(&self) -> Vec<String> {
        self.recipe.handoffs.clone()
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let agent = self
            .recipe
            .build(Some(self.template.render(&self.board)))
            .map_err(|e| AgentError::failed(e.to_string()))?;
        agent.run(thread, ctx).await
    }
}

/// A participant under its node (or step) id that writes what it produced
/// on the board, for templates and conditions.
struct Recorder {
    name: String,
    agent: String,
    inner: Arc<dyn Agent>,
    handoffs: Vec<String>,
    board: Board,
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
        let reply = self.inner.run(thread, ctx).await?;
        if let Some(last) = reply.messages.last() {
            self.board
                .record(&self.name, &self.agent, &last.text_content());
        }
        Ok(reply)
    }
}

/// A scripted model from a config: the replies in order, then what
/// `when_exhausted` says; each answer optionally takes `delay`.
struct Scripted {
    name: String,
    replies: Vec<ReplyForm>,
    exhausted: Exhausted,
    delay: Option<Duration>,
    next: AtomicUsize,
}

impl Scripted {
    fn new(
        name: String,
        replies: Vec<ReplyForm>,
        exhausted: Exhausted,
        delay: Option<Duration>,
    ) -> Self {
        Scripted {
            name,
            replies,
            exhausted,
            delay,
            next: AtomicUsize::new(0),
        }
    }

    fn take(&self) -> Result<ScriptedReply, ModelError> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let len = self.replies.len();
        let index = match self.exhausted {
            _ if n < len => n,
            Exhausted::Fail => {
                return Err(ModelError::Other(format!(
                    "scripted model `{}` ran out of replies after {len} (add replies, or `when_exhausted: repeat_last` / `cycle`)",
                    self.name
                )));
            }
            Exhausted::RepeatLast => len.saturating_sub(1),
            Exhausted::Cycle => n % len.max(1),
        };
        let Some(reply) = self.replies.get(index) else {
            return Err(ModelError::Other(format!(
                "scripted model `{}` has no replies",
                self.name
            )));
        };
        Ok(match reply.clone() {
            ReplyForm::Text(t) => ScriptedReply::text(t),
            ReplyForm::ToolCall(c) => ScriptedReply::tool_call(
                c.name,
                c.arguments.unwrap_or_else(|| serde_json::json!({})),
            ),
            ReplyForm::ToolCalls(list) => ScriptedReply::tool_calls(
                list.into_iter()
                    .map(|c| (c.name, c.arguments.unwrap_or_else(|| serde_json::json!({})))),
            ),
            ReplyForm::Handoff(h) => ScriptedReply::handoff(h.to, h.reason.unwrap_or_default()),
            ReplyForm::Structured(v) => ScriptedReply::structured(v),
            ReplyForm::Error(e) => ScriptedReply::error(e),
        })
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn model_name(&self) -> &str {
        &self.name
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        let reply = self.take()?;
        // The scripted model does the rest (tool-call ids, usage estimate).
        let one = ScriptedModel::new([reply]).named(self.name.clone());
        one.complete(request).await
    }
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        let response = self.complete(request).await?;
        let one = ScriptedModel::new([ScriptedReply::Response(response)]);
        one.stream(request).await
    }
}
