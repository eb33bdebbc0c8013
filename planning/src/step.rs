//! [`PlanStep`] (an agent and its request) and the node agent a step
//! compiles into, which turns what the node's thread holds into the thread
//! the step's agent sees.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_runtime::{Agent, AgentError, Content, Message, Reply, RunContext, Thread};

use crate::passing::{ResultContent, ResultPassing, StepInput, StepResult};
use crate::summarizer::SummarizeFn;

/// Metadata key of the default summarizer's message: the ids it merged.
pub const MERGED_KEY: &str = "troupe.plan.merged";

/// One step of a plan: an id (its node's name), the agent that does it and
/// the request it is given. The same agent can serve several steps: each
/// step runs it under its own id.
///
/// ```
/// use troupe_planning::PlanStep;
/// use troupe_runtime::{FnAgent, Thread};
///
/// let step = PlanStep::new("ORDER", FnAgent::sync("orderer", |_: &Thread| Ok("ordered")), "Order a latte");
/// assert_eq!(step.id(), "ORDER");
/// assert_eq!(step.description(), "Order a latte"); // by default, the request
/// ```
#[derive(Clone)]
pub struct PlanStep {
    id: String,
    agent: Arc<dyn Agent>,
    request: String,
    description: Option<String>,
}

impl fmt::Debug for PlanStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanStep")
            .field("id", &self.id)
            .field("agent", &self.agent.name())
            .field("request", &self.request)
            .finish()
    }
}

impl PlanStep {
    /// Step `id`: `agent` is asked `request`.
    pub fn new(id: impl Into<String>, agent: impl Agent, request: impl Into<String>) -> Self {
        Self::shared(id, Arc::new(agent), request)
    }

    /// Step `id` done by a shared agent.
    pub fn shared(
        id: impl Into<String>,
        agent: Arc<dyn Agent>,
        request: impl Into<String>,
    ) -> Self {
        PlanStep {
            id: id.into(),
            agent,
            request: request.into(),
            description: None,
        }
    }

    /// Describes the step (what later steps see as its result's
    /// description; the request by default).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The step's id, as plans and results name it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent that runs the step.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// What the step asks its agent to do.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The description (the request unless one was set).
    pub fn description(&self) -> &str {
        self.description.as_deref().unwrap_or(&self.request)
    }
}

/// What every node of a compiled plan knows of the others.
#[derive(Debug)]
pub(crate) struct Roster {
    pub(crate) ids: Vec<String>,
    pub(crate) descriptions: Vec<String>,
    pub(crate) index: HashMap<String, usize>,
}

/// What a node does with what it receives.
pub(crate) enum Body {
    /// Runs a step's agent (or a summarizer agent).
    Agent(Arc<dyn Agent>),
    /// The default summarizer: collects the branches' results.
    Collect,
    /// A summarizer function.
    Summarize(SummarizeFn),
}

/// The agent of one plan node.
pub(crate) struct StepAgent {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) request: String,
    pub(crate) body: Body,
    pub(crate) passing: ResultPassing,
    /// The nodes whose results it receives, in the order they run.
    pub(crate) sources: Vec<usize>,
    pub(crate) roster: Arc<Roster>,
}

impl fmt::Debug for StepAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepAgent")
            .field("id", &self.id)
            .field("sources", &self.sources)
            .field("passing", &self.passing)
            .finish()
    }
}

impl StepAgent {
    /// Sorts the node's thread into the task, the sources' messages and
    /// their results. The engine keeps every node's thread complete (each
    /// inherits its predecessors'), so everything earlier is there; what
    /// the step receives is chosen here.
    fn input(&self, thread: &Thread) -> StepInput {
        let mut task = Vec::new();
        let mut messages = Vec::new();
        let mut last: HashMap<usize, &Arc<Message>> = HashMap::new();
        for m in thread.messages() {
            match self.roster.index.get(&*m.source) {
                None => task.push(m.clone()),
                Some(&i) if self.sources.contains(&i) => {
                    messages.push(m.clone());
                    // A stop flag is not a result.
                    if !matches!(m.content, Content::Stop(_)) {
                        last.insert(i, m);
                    }
                }
                Some(_) => {}
            }
        }
        let results = self
            .sources
            .iter()
            .filter_map(|&i| last.get(&i).map(|m| self.result_of(i, m)))
            .collect();
        StepInput {
            step: self.id.clone(),
            request: self.request.clone(),
            task,
            results,
            messages,
        }
    }

    fn result_of(&self, node: usize, m: &Message) -> StepResult {
        let merged = match (&m.content, m.metadata.contains_key(MERGED_KEY)) {
            (Content::Structured(json), true) => serde_json::from_str(json).ok(),
            _ => None,
        };
        StepResult {
            id: self.roster.ids[node].clone(),
            description: self.roster.descriptions[node].clone(),
            content: match merged {
                Some(parts) => ResultContent::Merged(parts),
                None => ResultContent::Text(m.text_content().into_owned()),
            },
        }
    }
}

#[async_trait]
impl Agent for StepAgent {
    fn name(&self) -> &str {
        &self.id
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let input = self.input(&thread);
        match &self.body {
            Body::Collect => {
                let json = serde_json::to_string(&input.results).map_err(|e| {
                    AgentError::failed(format!("cannot collect the results of {}: {e}", self.id))
                })?;
                let ids: Vec<&str> = input.results.iter().map(|r| r.id.as_str()).collect();
                Ok(Reply::message(
                    Message::structured("", json).with_metadata(MERGED_KEY, ids.join(",")),
                ))
            }
            Body::Summarize(f) => Ok(Reply::text(f(&input.results))),
            Body::Agent(agent) => {
                let view = Thread::from_messages(input.view(&self.passing));
                let mut parts = agent.run(Arc::new(view), ctx).await?.into_parts();
                // The node's thread is the engine's (it holds what later
                // steps inherit); the agent's own thread and steering stay
                // inside the step.
                parts.thread = None;
                parts.next = None;
                Ok(Reply::from_parts(parts))
            }
        }
    }
}
