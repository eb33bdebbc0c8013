//! [`ReasonerAgent`]: the agent at the centre of seeds 000 and 003 — a
//! loop of reasoner turns, each answering the task status, an instant
//! response and the next actions (action groups or a dependency graph),
//! each batch compiled into a plan and run, parallel actions on branched
//! copies of the agent, the results fed back to the next turn.

mod actions;
mod answer;
mod batch;
mod copy;
mod drive;
mod record;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_agents::placeholders::{ACTION_MEMORY_KEY, ACTION_RESULT_KEY, TASK_STATES_KEY};
use troupe_runtime::{Agent, AgentError, Message, Reply, RunContext, Thread, state::StateDelta};

use crate::compile::CompileOptions;
use crate::error::PlanError;

pub use actions::{Action, ActionResult, MEMORY_KEY, render_memories, render_results};
pub use answer::{ANSWER_RULES, ActionCall, BranchStart, NextActions, ReasonerAnswer};
use copy::{Loop, Seed};

/// Metadata key of the reasoner's reply messages: `answer` on each
/// iteration's instant response, `results` on each batch's results,
/// `ceiling` on the note of a loop stopped at its ceiling, `stopped` on
/// the note of a batch the stop condition stopped (the loop ends).
pub const REASONER_KEY: &str = "troupe.reasoner";
/// Metadata key of an answer message's task status.
pub const STATUS_KEY: &str = "troupe.reasoner.status";

/// What every copy of one reasoner shares.
pub(crate) struct Core {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) reasoner: Arc<dyn Agent>,
    pub(crate) branch_reasoners: BTreeMap<String, Arc<dyn Agent>>,
    pub(crate) actions: Vec<Action>,
    pub(crate) summarizer: Option<Arc<dyn Agent>>,
    pub(crate) start_as_new: bool,
    pub(crate) max_depth: u32,
    pub(crate) max_iterations: u32,
    pub(crate) options: CompileOptions,
}

/// The reasoning agent: each iteration asks its reasoner (any agent, a
/// [`ChatAgent`](troupe_agents::ChatAgent) whose instructions use the
/// placeholders `{action_result}`, `{action_memory}`, `{conversation}`,
/// `{current_state}`, `{previous_states}`, `{attachments}`) for a
/// [`ReasonerAnswer`] and runs the batch of actions it asks for:
///
/// - **Action groups** `[[A], [B, C, D], [E]]`: groups in order; the
///   actions of a group of several run in parallel, each on a *branched
///   copy* of this agent — the action runs, then the copy reasons on its
///   result with loops of its own, and may branch again up to
///   [`ReasonerAgentBuilder::max_depth`] — and the summarizer merges them.
///   A copy starts fresh or inherits the task-status items and
///   conversation of the agent it branched from
///   ([`ReasonerAgentBuilder::branching_agent_start_as_new`], or the
///   action's own `branch`).
/// - **A dependency graph** (`{"actions": [...], "graph": "A -> B"}`):
///   plain actions, each receiving its predecessors' results.
///
/// The results (and their memories) are what the next reasoner turn sees.
/// The loop ends when an answer says `completed` or asks for nothing,
/// when a batch is stopped by the stop condition of the compile options
/// ([`CompileOptions::stop_condition`]), or after
/// [`ReasonerAgentBuilder::max_iterations`] answers. Each answer and
/// each batch's progress is reported as the turn's progress, so a run that
/// checkpoints resumes a turn cut short without asking a finished reasoner
/// turn again. The reply: each answer's response and each batch's results,
/// the last answer last; the run state gets the task-status items
/// (`task_states`) and the last results (`action_result`, `action_memory`).
#[derive(Clone)]
pub struct ReasonerAgent {
    core: Arc<Core>,
}

impl fmt::Debug for ReasonerAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReasonerAgent")
            .field("name", &self.core.name)
            .field("reasoner", &self.core.reasoner.name())
            .field(
                "actions",
                &self
                    .core
                    .actions
                    .iter()
                    .map(Action::name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ReasonerAgent {
    /// Starts describing a reasoning agent named `name`.
    pub fn builder(name: impl Into<String>) -> ReasonerAgentBuilder {
        ReasonerAgentBuilder {
            name: name.into(),
            description: String::new(),
            reasoner: None,
            branch_reasoners: BTreeMap::new(),
            actions: Vec::new(),
            summarizer: None,
            start_as_new: false,
            max_depth: 2,
            max_iterations: 10,
            options: CompileOptions::new().name("actions"),
        }
    }
}

/// The rules of the answer and the actions to choose from: what a
/// reasoner's instructions are followed by.
pub fn reasoner_rules(actions: &[Action]) -> String {
    let mut text = format!("{ANSWER_RULES}\n\nActions:");
    for a in actions {
        text.push_str(&format!("\n- {}: {}", a.name(), a.description()));
    }
    text
}

#[async_trait]
impl Agent for ReasonerAgent {
    fn name(&self) -> &str {
        &self.core.name
    }

    fn description(&self) -> &str {
        &self.core.description
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let me = Loop {
            core: &self.core,
            depth: 0,
            path: String::new(),
            seed: Seed::default(),
        };
        let done = me.drive(&thread, &ctx, None).await?;
        let mut messages = Vec::new();
        for r in &done.records {
            match r {
                record::Record::Answer { answer } => messages.push(
                    Message::text("", answer.response.clone())
                        .with_metadata(REASONER_KEY, "answer")
                        .with_metadata(STATUS_KEY, answer.status.as_str()),
                ),
                record::Record::Results { results } => messages.push(
                    Message::text("", render_results(results))
                        .with_metadata(REASONER_KEY, "results"),
                ),
                record::Record::Stopped { reason } => messages.push(
                    Message::text("", format!("Stopped by the stop condition: {reason}"))
                        .with_metadata(REASONER_KEY, "stopped"),
                ),
                record::Record::Action { .. } => {}
            }
        }
        if done.at_ceiling {
            messages.push(
                Message::text(
                    "",
                    format!(
                        "Stopped after {} reasoner turns (max_iterations) before the task was completed.",
                        self.core.max_iterations
                    ),
                )
                .with_metadata(REASONER_KEY, "ceiling"),
            );
        }
        let last = done.last_results();
        let states = me.states(&done.records);
        let mut reply = Reply::from(messages).with_state_delta(
            StateDelta::new()
                .set(
                    TASK_STATES_KEY,
                    serde_json::to_string(&states).unwrap_or_default(),
                )
                .set(ACTION_RESULT_KEY, render_results(&last))
                .set(ACTION_MEMORY_KEY, render_memories(&last)),
        );
        if done.resumed {
            reply = reply.with_thread(done.own);
        }
        Ok(reply)
    }
}

/// Builds a [`ReasonerAgent`].
pub struct ReasonerAgentBuilder {
    name: String,
    description: String,
    reasoner: Option<Arc<dyn Agent>>,
    branch_reasoners: BTreeMap<String, Arc<dyn Agent>>,
    actions: Vec<Action>,
    summarizer: Option<Arc<dyn Agent>>,
    start_as_new: bool,
    max_depth: u32,
    max_iterations: u32,
    options: CompileOptions,
}

impl fmt::Debug for ReasonerAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReasonerAgentBuilder")
            .field("name", &self.name)
            .field("actions", &self.actions.len())
            .finish()
    }
}

impl ReasonerAgentBuilder {
    /// Describes the agent.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The agent that answers each reasoner turn (its last message is the
    /// [`ReasonerAnswer`], as JSON).
    pub fn reasoner(mut self, agent: Arc<dyn Agent>) -> Self {
        self.reasoner = Some(agent);
        self
    }

    /// The reasoner of the branched copy at `path` (`B`, `D/X`: the
    /// action ids down from this agent), instead of the agent's own: a
    /// scripted model per copy, say.
    pub fn branch_reasoner(mut self, path: impl Into<String>, agent: Arc<dyn Agent>) -> Self {
        self.branch_reasoners.insert(path.into(), agent);
        self
    }

    /// Adds an action.
    pub fn action(mut self, action: Action) -> Self {
        self.actions.push(action);
        self
    }

    /// The agent that merges a parallel group's results (default: they
    /// are collected as attachments).
    pub fn summarizer(mut self, agent: Arc<dyn Agent>) -> Self {
        self.summarizer = Some(agent);
        self
    }

    /// Whether branched copies start with no states of their own (default
    /// `false`: they inherit); an action's `branch` says otherwise.
    pub fn branching_agent_start_as_new(mut self, fresh: bool) -> Self {
        self.start_as_new = fresh;
        self
    }

    /// How deep copies may branch (default 2): at the limit, a parallel
    /// group's actions run as plain actions.
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth;
        self
    }

    /// Reasoner turns allowed per copy (default 10; at least 1).
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = n.max(1);
        self
    }

    /// How batches are compiled (passing, stop condition, concurrency…).
    pub fn compile_options(mut self, options: CompileOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks the parts and builds the agent.
    pub fn build(self) -> Result<ReasonerAgent, PlanError> {
        let missing = |what: &str| PlanError::Incomplete {
            agent: self.name.clone(),
            what: what.into(),
        };
        let reasoner = self.reasoner.clone().ok_or_else(|| missing("a reasoner"))?;
        Ok(ReasonerAgent {
            core: Arc::new(Core {
                name: self.name,
                description: self.description,
                reasoner,
                branch_reasoners: self.branch_reasoners,
                actions: self.actions,
                summarizer: self.summarizer,
                start_as_new: self.start_as_new,
                max_depth: self.max_depth,
                max_iterations: self.max_iterations,
                options: self.options,
            }),
        })
    }
}
