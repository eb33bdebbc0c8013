//! [`PlanningAgent`]: asks a model to break a task into sub-problems and
//! their dependency graph, compiles the plan, runs it with the agents it was
//! given, and answers with the plan and the results.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_agents::{ChatMessage, ChatModel, ChatRequest, complete_metered};
use troupe_runtime::{
    Agent, AgentError, BuildError, Content, Event, Message, ProgressRelay, Reply, RunContext,
    RunStatus, Thread, Workflow, message::USER, message::Usage,
};

use crate::answer::{AnswerError, PlanFormat, PlanSpec, structured_output};
use crate::compile::CompileOptions;
use crate::error::PlanError;
use crate::flags::StopFlag;
use crate::plan::Plan;

/// Metadata key of the planning agent's messages: `plan` on the plan,
/// `result` on each step's result, `stopped` on the note of an early stop.
pub const PLAN_KEY: &str = "troupe.plan";
/// Metadata key naming the step a result message comes from.
pub const STEP_KEY: &str = "troupe.plan.step";

/// Metadata key of the plan message kept in the planning agent's thread
/// while its plan runs: the plan as the model wrote it, in JSON.
const SPEC_KEY: &str = "troupe.plan.spec";

/// The child of the planning agent's thread that holds its plan's run
/// while its turn is under way (reported as the turn's progress), so that
/// a turn cut short goes on with the same plan, from the steps it had not
/// finished, without asking the model again.
const PLAN_RUN: &str = "troupe.plan#run";

/// What the planner is, before the rules of the format.
const DEFAULT_INSTRUCTIONS: &str = "You are a planner. Break the task into sub-problems that \
other agents will solve, and say which sub-problems depend on which. Keep the plan as small as \
the task allows; sub-problems that do not depend on each other run in parallel.";

/// The rules every format shares.
const GRAPH_RULES: &str = "Each sub-problem has an ID (capital letters, digits and underscores, \
such as FIND_RECIPE) and a request: a self-contained instruction for the agent that solves it. \
A sub-problem receives the results of the sub-problems it depends on.\n\n\
The dependency graph has one path per line: `A -> B -> C` means A runs before B, and B before C. \
Inside a position, `,` lists sub-problems that run in parallel: `A -> B, C -> D` runs A, then B \
and C at the same time, then D. A sub-problem that depends on nothing and that nothing depends on \
is a line of its own. Every sub-problem must appear in the graph, and the graph must not loop.";

/// A plan the model wrote, checked and compiled.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The plan as the model wrote it.
    pub spec: PlanSpec,
    /// The plan built from the spec: its steps and the order between them.
    pub plan: Plan,
    /// The plan, compiled.
    pub workflow: Workflow,
    /// Model calls it took (1 when the first answer was usable).
    pub attempts: u32,
    /// Tokens the model calls spent.
    pub usage: Usage,
}

/// An agent that plans before it acts: it asks its model for sub-problems
/// (an id and a request each) and their dependency graph, compiles them
/// into a workflow (see [`Plan`]), runs it with its agents and answers with
/// the results.
///
/// Its reply is the plan first — a text message in [`PlanFormat::Text`]
/// marked `troupe.plan = plan`, which surfaces as a `MessageProduced`
/// event — then each step's result in execution order (marked `result`,
/// with the step id under [`STEP_KEY`]), then, if a step stopped the plan
/// early, a note saying which and why. A step that aborts fails the turn.
///
/// An answer that does not parse or does not make a valid plan is shown to
/// the model again with what is wrong (the error names the line), up to
/// [`PlanningAgentBuilder::max_attempts`] calls in all.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_agents::{ScriptedModel, ScriptedReply};
/// use troupe_planning::PlanningAgent;
/// use troupe_runtime::{Agent, FnAgent, Message, RunContext, Thread};
///
/// let model = ScriptedModel::new([ScriptedReply::text(
///     "STEPS:\nFIND: find a recipe\nBUY: buy what it needs\nGRAPH:\nFIND -> BUY",
/// )]);
/// let worker = FnAgent::sync("worker", |t: &Thread| {
///     Ok(format!("did: {}", t.last().map(|m| m.text_content().into_owned()).unwrap_or_default()))
/// });
/// let planner = PlanningAgent::builder("planner").model(model).agent(worker).build()?;
/// let thread = Arc::new(Thread::from_messages([Message::user("cook dinner")]));
/// let reply = planner.run(thread, RunContext::new()).await?;
/// let texts: Vec<String> = reply.messages().iter().map(|m| m.text_content().into_owned()).collect();
/// assert!(texts[0].starts_with("STEPS:"));
/// assert_eq!(texts[1..], ["did: find a recipe", "did: buy what it needs"]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PlanningAgent {
    name: String,
    description: String,
    model: Arc<dyn ChatModel>,
    agents: Vec<Arc<dyn Agent>>,
    format: PlanFormat,
    max_attempts: u32,
    instructions: String,
    options: CompileOptions,
}

impl fmt::Debug for PlanningAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanningAgent")
            .field("name", &self.name)
            .field("model", &self.model.model_name())
            .field(
                "agents",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("format", &self.format)
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

impl PlanningAgent {
    /// Starts describing a planning agent named `name`.
    pub fn builder(name: impl Into<String>) -> PlanningAgentBuilder {
        PlanningAgentBuilder {
            name: name.into(),
            description: String::new(),
            model: None,
            agents: Vec::new(),
            format: PlanFormat::default(),
            max_attempts: 3,
            instructions: None,
            options: CompileOptions::default(),
        }
    }

    /// The system prompt: the instructions, the format's rules and the
    /// agents to choose from.
    pub fn system_prompt(&self) -> String {
        let mut prompt = format!("{}\n\n{GRAPH_RULES}\n\n", self.instructions);
        let choose = self.agents.len() > 1;
        match self.format {
            PlanFormat::Text => {
                prompt.push_str(
                    "Answer in exactly this format, with nothing after the graph:\n\
                     STEPS:\n<ID>: <request>\n<ID>: <request>\nGRAPH:\n<path>\n<path>",
                );
                if choose {
                    prompt.push_str(
                        "\n\nTo choose the agent of a sub-problem, write `<ID> [<agent>]: <request>`; \
                         without a choice the first agent solves it.",
                    );
                }
            }
            PlanFormat::Json => {
                prompt.push_str(
                    "Answer with one JSON object: {\"steps\": [{\"id\": \"<ID>\", \"request\": \
                     \"<request>\"}], \"graph\": [\"<path>\", \"<path>\"]}",
                );
                if choose {
                    prompt.push_str(
                        "\n\nTo choose the agent of a sub-problem, give it an \"agent\" field; \
                         without one the first agent solves it.",
                    );
                }
            }
        }
        if choose {
            prompt.push_str("\n\nAgents:");
            for a in &self.agents {
                prompt.push_str(&format!("\n- {}: {}", a.name(), a.description()));
            }
        }
        prompt
    }

    /// Asks the model for a plan, showing it what was wrong with answers
    /// that cannot be used, and compiles the first that can.
    pub async fn plan(&self, thread: &Thread) -> Result<Planned, AgentError> {
        self.plan_in(thread, None).await
    }

    /// [`PlanningAgent::plan`]; with `ctx`, each model call is one of that
    /// turn's: its events at the turn's path, its usage and cost (at the
    /// prices of the model that answered) in the turn's meter.
    async fn plan_in(
        &self,
        thread: &Thread,
        ctx: Option<&RunContext>,
    ) -> Result<Planned, AgentError> {
        let mut messages = vec![ChatMessage::system(self.system_prompt())];
        messages.extend(self.conversation(thread));
        if messages.len() == 1 {
            return Err(AgentError::failed(format!(
                "{}: nothing to plan, the thread holds no task",
                self.name
            )));
        }
        let mut request = ChatRequest::new(messages);
        if self.format == PlanFormat::Json {
            let names: Vec<&str> = self.agents.iter().map(|a| a.name()).collect();
            let output = structured_output(&names)
                .map_err(|e| AgentError::failed(e.to_string()).with_source(e))?;
            request = request.with_response_format(output.response_format());
        }
        let mut usage = Usage::default();
        let mut last_problem = String::new();
        for attempt in 1..=self.max_attempts {
            let response = match ctx {
                Some(ctx) => complete_metered(&*self.model, &request, ctx).await?,
                None => self.model.complete(&request).await?,
            };
            usage += response.usage.unwrap_or_default();
            let answer = response.text_content().to_string();
            match self.read(&answer) {
                Ok((spec, plan, workflow)) => {
                    return Ok(Planned {
                        spec,
                        plan,
                        workflow,
                        attempts: attempt,
                        usage,
                    });
                }
                Err(problem) => {
                    last_problem = problem;
                    request.messages.push(ChatMessage::assistant(answer));
                    request.messages.push(ChatMessage::user(format!(
                        "Your plan cannot be used: {last_problem}.\nWrite the whole plan again, in the same format."
                    )));
                }
            }
        }
        Err(AgentError::failed(format!(
            "{}: no usable plan after {} attempt(s); the last problem: {last_problem}",
            self.name, self.max_attempts
        )))
    }

    /// Reads, checks and compiles one answer; the error is what the model
    /// is told.
    fn read(&self, answer: &str) -> Result<(PlanSpec, Plan, Workflow), String> {
        let spec = PlanSpec::parse(answer, self.format).map_err(|e| e.to_string())?;
        let plan = spec.to_plan(&self.agents).map_err(|e| e.to_string())?;
        let workflow = plan
            .compile_with(&self.options)
            .map_err(|e| AnswerError::Graph(e).to_string())?;
        Ok((spec, plan, workflow))
    }

    /// The thread as the model sees it: its own earlier answers as the
    /// assistant's, everyone else's as the user's.
    fn conversation(&self, thread: &Thread) -> Vec<ChatMessage> {
        thread
            .messages()
            .iter()
            .filter(|m| !matches!(m.content, Content::Stop(_)))
            .filter_map(|m| {
                let text = m.text_content().into_owned();
                if text.trim().is_empty() {
                    None
                } else if *m.source == *self.name {
                    Some(ChatMessage::assistant(text))
                } else if &*m.source == USER || m.source.is_empty() {
                    Some(ChatMessage::user(text))
                } else {
                    Some(ChatMessage::User {
                        content: text,
                        name: Some(m.source.to_string()),
                    })
                }
            })
            .collect()
    }
}

#[async_trait]
impl Agent for PlanningAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let (planned, own, input) = match self.resumed(&thread)? {
            // A turn cut short: the same plan, its run as it last reported.
            Some(resumed) => resumed,
            None => {
                // The planning calls count with the run's spend, each as it
                // is made (the plan's own run folds its spend into this
                // turn's too).
                let planned = self.plan_in(&thread, Some(&ctx)).await?;
                // The plan's input is the conversation (not this agent's
                // children or state): every step sees it as the task.
                let input = Thread::from_messages(thread.messages().iter().map(|m| (**m).clone()));
                (planned, None, input)
            }
        };
        ctx.emit_with(|| Event::Plan {
            path: ctx.path().clone(),
            plan: planned.spec.to_text(),
        });
        // When the run above checkpoints, the plan goes into this turn's
        // thread at once (a checkpoint holds it before any step ends), and
        // the plan's run reports there after each step.
        let relay = self.relay(&thread, own.as_ref(), &planned, &ctx);
        if let Some(relay) = &relay
            && own.is_none()
        {
            relay.report(input.clone());
        }
        let result = planned
            .workflow
            .run_relayed(input, &ctx, relay)
            .await
            .map_err(AgentError::workflow)?;
        // Stopped gracefully with the run above: this turn is cut short
        // (its plan's run reported where it stopped), and goes on from
        // there when that run resumes.
        if result.status == RunStatus::Interrupted {
            return Err(AgentError::cancelled());
        }

        let mut messages = vec![
            Message::text("", planned.spec.to_text())
                .with_metadata(PLAN_KEY, "plan")
                .with_usage(planned.usage),
        ];
        for id in planned.plan.order() {
            let last = result
                .messages
                .iter()
                .rev()
                .find(|m| &*m.source == id && !matches!(m.content, Content::Stop(_)));
            if let Some(m) = last {
                messages.push(
                    Message::new("", m.content.clone())
                        .with_metadata(PLAN_KEY, "result")
                        .with_metadata(STEP_KEY, id),
                );
            }
        }
        if let Some(flag) = StopFlag::of_result(&result) {
            messages.push(
                Message::text(
                    "",
                    format!(
                        "The plan was stopped early by {}: {}",
                        flag.step(),
                        flag.reason()
                    ),
                )
                .with_metadata(PLAN_KEY, "stopped")
                .with_metadata(STEP_KEY, flag.step()),
            );
        }
        // The steps' tokens, counted once, on the answer's last message.
        if let Some(last) = messages.last_mut() {
            let spent = last.usage.unwrap_or_default() + result.usage;
            last.usage = Some(spent);
        }
        // A turn that went on from its progress leaves this agent's thread
        // as it was before the plan.
        let reply = Reply::from(messages);
        Ok(match own {
            Some(own) => reply.with_thread(own),
            None => reply,
        })
    }
}

impl PlanningAgent {
    /// The plan of a turn cut short, if `thread` is the progress it
    /// reported: the plan (its message last, its run under [`PLAN_RUN`]),
    /// the thread as it was before the plan, and the plan's run to go on
    /// from. A plan that no longer compiles with this agent's agents fails
    /// the turn, saying so.
    fn resumed(
        &self,
        thread: &Thread,
    ) -> Result<Option<(Planned, Option<Thread>, Thread)>, AgentError> {
        let (Some(run), Some(note)) = (thread.child(PLAN_RUN), thread.last()) else {
            return Ok(None);
        };
        let Some(json) = note.metadata.get(SPEC_KEY) else {
            return Ok(None);
        };
        let unusable = |e: &dyn fmt::Display| {
            AgentError::failed(format!(
                "{}: cannot go on with the plan of the interrupted turn: {e}",
                self.name
            ))
        };
        let spec: PlanSpec = serde_json::from_str(json).map_err(|e| unusable(&e))?;
        let (plan, workflow) = spec
            .to_plan(&self.agents)
            .map_err(|e| unusable(&e))
            .and_then(|plan| {
                let wf = plan.compile_with(&self.options).map_err(|e| unusable(&e))?;
                Ok((plan, wf))
            })?;
        let mut own = Thread::new();
        let before = thread.len() - 1;
        own.extend_shared(thread.messages()[..before].iter().cloned());
        *own.children_mut() = thread.children().clone();
        own.children_mut().remove(PLAN_RUN);
        *own.state_mut() = thread.state().cloned();
        let planned = Planned {
            spec,
            plan,
            workflow,
            attempts: 1,
            usage: note.usage.unwrap_or_default(),
        };
        Ok(Some((planned, Some(own), run.clone())))
    }

    /// How the plan's run reports its progress into this turn's thread
    /// (`thread`, or `own` when the turn went on from its progress): the
    /// thread as it was, then the plan's message (its spec inside), its run
    /// under [`PLAN_RUN`]. `None` when the run above does not checkpoint.
    fn relay(
        &self,
        thread: &Arc<Thread>,
        own: Option<&Thread>,
        planned: &Planned,
        ctx: &RunContext,
    ) -> Option<ProgressRelay> {
        let spec = serde_json::to_string(&planned.spec).ok()?;
        let mut base = own.cloned().unwrap_or_else(|| (**thread).clone());
        base.push(
            Message::text(&*self.name, planned.spec.to_text())
                .with_metadata(PLAN_KEY, "plan")
                .with_metadata(SPEC_KEY, spec)
                .with_usage(planned.usage),
        );
        ctx.relay_progress(thread, move |run| {
            let mut t = base.clone();
            t.children_mut().insert(PLAN_RUN.to_string(), Box::new(run));
            t
        })
    }
}

/// Builds a [`PlanningAgent`].
pub struct PlanningAgentBuilder {
    name: String,
    description: String,
    model: Option<Arc<dyn ChatModel>>,
    agents: Vec<Arc<dyn Agent>>,
    format: PlanFormat,
    max_attempts: u32,
    instructions: Option<String>,
    options: CompileOptions,
}

impl fmt::Debug for PlanningAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanningAgentBuilder")
            .field("name", &self.name)
            .field("agents", &self.agents.len())
            .finish()
    }
}

impl PlanningAgentBuilder {
    /// Describes the agent (for selectors and tool descriptions).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The model that writes the plans.
    pub fn model(self, model: impl ChatModel) -> Self {
        self.model_arc(Arc::new(model))
    }

    /// The model, shared.
    pub fn model_arc(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds an agent the plan's steps can use; the first is the default.
    pub fn agent(self, agent: impl Agent) -> Self {
        self.agent_arc(Arc::new(agent))
    }

    /// Adds a shared agent.
    pub fn agent_arc(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agents.push(agent);
        self
    }

    /// Adds several shared agents.
    pub fn agents(mut self, agents: impl IntoIterator<Item = Arc<dyn Agent>>) -> Self {
        self.agents.extend(agents);
        self
    }

    /// How the model writes the plan (default [`PlanFormat::Text`]).
    pub fn format(mut self, format: PlanFormat) -> Self {
        self.format = format;
        self
    }

    /// Model calls allowed in all, the first included (default 3; at
    /// least 1).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// Replaces the planner's instructions (the format's rules and the
    /// agents are always added after them).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// How plans are compiled (passing mode, scope, scheduler, stop
    /// condition…).
    pub fn compile_options(mut self, options: CompileOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks the parts and builds the agent.
    pub fn build(self) -> Result<PlanningAgent, PlanError> {
        let missing = |what: &str| PlanError::Incomplete {
            agent: self.name.clone(),
            what: what.into(),
        };
        let model = self.model.clone().ok_or_else(|| missing("a model"))?;
        if self.agents.is_empty() {
            return Err(missing("at least one agent to run the steps"));
        }
        for (i, a) in self.agents.iter().enumerate() {
            if self.agents[..i].iter().any(|b| b.name() == a.name()) {
                return Err(BuildError::DuplicateParticipant(a.name().to_string()).into());
            }
        }
        Ok(PlanningAgent {
            name: self.name,
            description: self.description,
            model,
            agents: self.agents,
            format: self.format,
            max_attempts: self.max_attempts,
            instructions: self
                .instructions
                .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_string()),
            options: self.options,
        })
    }
}
