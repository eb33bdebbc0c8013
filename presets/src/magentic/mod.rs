//! [`Magentic`]: a manager keeps a task ledger and a progress ledger, picks
//! who speaks next, replans when the team stalls, and writes the final
//! answer itself.

mod history;
mod ledger;
mod manager;
mod prompts;

use std::sync::Arc;

use troupe_agents::ChatModel;
use troupe_runtime::{
    Graph, RouterBuilder, StopCondition, Workflow, graph::Condition, message::USER,
};

use crate::error::PresetError;
use crate::speaker::SpeakerFallback;
use crate::team::{Team, team_methods};

pub use ledger::{
    Choice, Judgement, ProgressLedger, TaskLedger, progress_ledger_schema, task_ledger_schema,
};

use history::OUTCOME;
use manager::{Manager, Outcome, Settings};

/// The name of the manager node; no participant may take it.
const MANAGER: &str = "manager";

/// AutoGen MagenticOne's and Agent Framework's Magentic orchestration: for
/// open-ended tasks where no fixed order fits.
///
/// The manager (a model, `manager` in the team) first writes the **task
/// ledger** — facts given, to look up, to derive, educated guesses, and a
/// plan — and tells the team. After every turn it writes a **progress
/// ledger**: is the request satisfied, are we in a loop, is progress being
/// made, who speaks next and with what instruction. Both are structured
/// output, validated against their schemas ([`task_ledger_schema`],
/// [`progress_ledger_schema`]); an invalid answer is sent back with what is
/// wrong, up to `max_attempts` times. A next speaker is read as
/// [`parse_speaker`](crate::parse_speaker) reads it (any case, quotes,
/// `Agent: x`, a sentence naming one participant); when the model names
/// none, the [`SpeakerFallback`] decides.
///
/// A progress ledger without progress, or in a loop, counts a stall (one
/// with progress takes one back); at `max_stalls` the manager rewrites the
/// task ledger — facts updated, a new plan — and starts over, up to
/// `max_resets` times. The task ends with a final answer the manager
/// writes itself (`final_answer_prompt`): when the request is satisfied
/// (the run completes), after `max_turns` progress checks (default 20), or
/// when the team stalls once more after `max_resets` replans (the run then
/// ends `Stopped`, its condition `custom(magentic_max_turns)` or
/// `custom(magentic_max_resets)`).
///
/// With [`plan_review`](MagenticBuilder::plan_review), the run first asks
/// the user (human in the loop: it ends waiting for input) to approve the
/// plan or send one of their own; with [`ask_user`](MagenticBuilder::ask_user)
/// the manager may name `user` as the next speaker, and the run asks them
/// its question. Every ledger is an [`Event::Ledger`](troupe_runtime::Event::Ledger)
/// and a private message of the manager's thread (metadata
/// `troupe.magentic`), so a run checkpoints, resumes and continues like
/// any other; the plan, instructions and final answer are messages the
/// whole team sees.
///
/// As a workflow: a `manager` node that every participant's turn leads back
/// to and that leads to the participant it selects; a broadcast router.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_agents::{ScriptedModel, ScriptedReply};
/// use troupe_presets::Magentic;
/// use troupe_runtime::{FnAgent, RunContext, Thread};
///
/// let ledger = r#"{"facts_given":["2 + 2"],"facts_to_look_up":[],"facts_to_derive":["the sum"],"educated_guesses":[],"plan":["math adds"]}"#;
/// let progress = |done: bool, next: &str| format!(
///     r#"{{"is_request_satisfied":{{"reason":"","answer":{done}}},"is_in_loop":{{"reason":"","answer":false}},"is_progress_being_made":{{"reason":"","answer":true}},"next_speaker":{{"reason":"","answer":"{next}"}},"instruction_or_question":{{"reason":"","answer":"add them"}}}}"#);
/// let model = ScriptedModel::new([
///     ScriptedReply::text(ledger),
///     ScriptedReply::text(progress(false, "Math")),
///     ScriptedReply::text(progress(true, "")),
///     ScriptedReply::text("2 + 2 = 4"),
/// ]);
/// let team = Magentic::builder()
///     .participant(FnAgent::sync("math", |_: &Thread| Ok("4")).with_description("adds"))
///     .model(Arc::new(model))
///     .build()?;
/// let result = team.run_task("what is 2 + 2?", &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "2 + 2 = 4");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Magentic;

impl Magentic {
    /// The name of the manager node; no participant may take it.
    pub const MANAGER: &'static str = MANAGER;

    /// The default final-answer prompt, for
    /// [`MagenticBuilder::final_answer_prompt`] to extend: `{task}`,
    /// `{status}` (completed, or why the team stopped), `{history}`.
    pub const DEFAULT_FINAL_ANSWER_PROMPT: &'static str = prompts::FINAL_ANSWER;

    /// The stop condition a task that ran out of turns ends on.
    pub const MAX_TURNS_CONDITION: &'static str = "magentic_max_turns";

    /// The stop condition a task that stalled past `max_resets` ends on.
    pub const MAX_RESETS_CONDITION: &'static str = "magentic_max_resets";

    /// Starts describing a Magentic team.
    pub fn builder() -> MagenticBuilder {
        MagenticBuilder::default()
    }
}

/// Builds a [`Magentic`] workflow.
pub struct MagenticBuilder {
    team: Team,
    model: Option<Arc<dyn ChatModel>>,
    max_stalls: u32,
    max_resets: u32,
    max_attempts: u32,
    fallback: SpeakerFallback,
    plan_review: bool,
    ask_user: bool,
    final_answer_prompt: String,
}

impl Default for MagenticBuilder {
    fn default() -> Self {
        MagenticBuilder {
            team: Team::default(),
            model: None,
            max_stalls: 3,
            max_resets: 2,
            max_attempts: 3,
            fallback: SpeakerFallback::default(),
            plan_review: false,
            ask_user: false,
            final_answer_prompt: prompts::FINAL_ANSWER.to_string(),
        }
    }
}

impl MagenticBuilder {
    team_methods!();

    /// The manager's model (required).
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Stalls (progress checks without progress, or in a loop) before the
    /// manager replans (default 3; 0 counts as 1).
    pub fn max_stalls(mut self, n: u32) -> Self {
        self.max_stalls = n.max(1);
        self
    }

    /// Replans before the manager gives up (default 2).
    pub fn max_resets(mut self, n: u32) -> Self {
        self.max_resets = n;
        self
    }

    /// How often the model is asked for a valid ledger before the turn
    /// fails, or the fallback picks the speaker (default 3; 0 counts as 1).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// Who speaks when the model names no valid speaker in `max_attempts`:
    /// the next participant in turn (the default), or a failed turn.
    pub fn fallback(mut self, fallback: SpeakerFallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Whether the user approves or edits the plan before work starts
    /// (default no): the run ends waiting for input with the plan; an
    /// answer of `approve` (or `ok`, `yes`, nothing) keeps it, any other
    /// answer is the plan, one step a line.
    pub fn plan_review(mut self, on: bool) -> Self {
        self.plan_review = on;
        self
    }

    /// Whether the manager may name `user` as the next speaker, when
    /// information only the user has is missing (default no): the run then
    /// ends waiting for input with the manager's question, and the answer
    /// is passed on to the team.
    pub fn ask_user(mut self, on: bool) -> Self {
        self.ask_user = on;
        self
    }

    /// The prompt the manager writes the final answer with: `{task}`,
    /// `{status}`, `{history}`.
    pub fn final_answer_prompt(mut self, template: impl Into<String>) -> Self {
        self.final_answer_prompt = template.into();
        self
    }

    /// Builds the team as a workflow.
    pub fn build(mut self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("magentic");
        let names = self.team.names();
        if names.is_empty() {
            return Err(PresetError::NoParticipants(name));
        }
        if let Some(taken) = names.iter().find(|n| *n == MANAGER || *n == USER) {
            return Err(PresetError::ReservedName {
                team: name,
                name: taken.clone(),
            });
        }
        let Some(model) = self.model.take() else {
            return Err(PresetError::Missing {
                team: name,
                what: "a model for its manager".into(),
            });
        };
        // The manager counts its own rounds and ends them with a final
        // answer; `max_turns` is not a plain stop condition here.
        let max_turns = self.team.max_turns.take().unwrap_or(20);
        let settings = Settings {
            max_stalls: self.max_stalls,
            max_resets: self.max_resets,
            max_turns: u32::try_from(max_turns).unwrap_or(u32::MAX),
            max_attempts: self.max_attempts,
            fallback: self.fallback,
            plan_review: self.plan_review,
            ask_user: self.ask_user,
            final_answer_prompt: self.final_answer_prompt,
        };
        let roles = self
            .team
            .agents
            .iter()
            .map(|a| (a.name().to_string(), a.description().to_string()))
            .collect();
        let manager = Manager::new(MANAGER.to_string(), model, roles, settings).map_err(|e| {
            PresetError::Missing {
                team: name.clone(),
                what: format!("valid ledger schemas ({e})"),
            }
        })?;
        let mut graph = Graph::builder()
            .add_agent(manager)
            .add_agents(self.team.agents.iter().cloned())
            .start(MANAGER)
            // A conversation: bounded by the manager's counters.
            .loop_limit(u32::MAX);
        for n in &names {
            graph = graph
                .add_transition(MANAGER, n.clone(), Condition::selected(n.clone()))
                .add_edge(n.clone(), MANAGER);
        }
        let gave_up = |outcome: Outcome| {
            StopCondition::custom(
                match outcome {
                    Outcome::MaxResets => Magentic::MAX_RESETS_CONDITION,
                    _ => Magentic::MAX_TURNS_CONDITION,
                },
                move |m| {
                    &*m.source == MANAGER
                        && m.metadata.get(OUTCOME).map(String::as_str) == Some(outcome.as_str())
                },
            )
        };
        let ends = gave_up(Outcome::MaxTurns) | gave_up(Outcome::MaxResets);
        self.team.stop = Some(match self.team.stop.take() {
            Some(s) => s | ends,
            None => ends,
        });
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph.build()?)
            .router(RouterBuilder::default());
        workflow = self.team.configure_conversation(workflow);
        Ok(workflow.build()?)
    }
}
