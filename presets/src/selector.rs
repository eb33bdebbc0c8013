//! [`SelectorGroupChat`]: a model or a function picks who speaks next.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_agents::{ChatMessage, ChatModel, ChatRequest, complete_metered};
use troupe_runtime::{
    Agent, AgentError, Event, Graph, Message, Reply, RouterBuilder, RunContext, Thread, Workflow,
    graph::Condition,
};

use crate::error::PresetError;
use crate::speaker::{SpeakerFallback, SpeakerMatch, correction, fallback_speaker, parse_speaker};
use crate::team::{Team, team_methods};

/// The name of the node that picks speakers; no participant may take it.
const SELECTOR: &str = "selector";

/// AutoGen's prompt, so teams moved over behave alike. `{roles}` lists
/// each candidate with its description, `{participants}` their names,
/// `{history}` the conversation.
const DEFAULT_SELECTOR_PROMPT: &str = "You are in a role play game. The following roles are available:
{roles}.
Read the following conversation. Then select the next role from {participants} to play. Only return the role.

{history}

Read the above conversation. Then select the next role from {participants} to play. Only return the role.";

/// What the selector's model is asked after each of its earlier picks.
const NEXT_SPEAKER: &str = "Who speaks next? Only return the role.";

/// What a selector or candidate function sees.
#[derive(Debug, Clone, Copy)]
pub struct SelectorInput<'a> {
    /// The conversation so far.
    pub thread: &'a Thread,
    /// Who spoke last, if a participant did.
    pub previous: Option<&'a str>,
    /// Every participant's name, in order.
    pub participants: &'a [String],
}

/// Picks the next speaker, or `None` to let the model decide.
type SelectorFn = Arc<dyn Fn(&SelectorInput<'_>) -> Option<String> + Send + Sync>;
/// Narrows who may speak next.
type CandidateFn = Arc<dyn Fn(&SelectorInput<'_>) -> Vec<String> + Send + Sync>;

/// A group chat whose next speaker is chosen each turn from the
/// participants' names and descriptions and the history: by a model, by a
/// selector function, or by the function with the model as fallback.
///
/// As a workflow: a `selector` node that every participant's turn leads
/// back to and that leads to the participant it selects
/// (`Condition::selected`); a broadcast router. The selector adds nothing
/// to the conversation: its choices are `Selected` events.
///
/// The model's answer is read by [`parse_speaker`](crate::parse_speaker):
/// any case, quotes, Markdown, `Agent: x`, or a sentence that mentions
/// exactly one candidate. When it names no single candidate the model is
/// told so, with the valid names, and asked again, up to
/// `max_selector_attempts` (default 3); then the
/// [`fallback`](SelectorBuilder::fallback) decides: the next candidate
/// after the previous speaker (a `Warning` event says so), or a failed
/// turn.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_presets::SelectorGroupChat;
/// use troupe_runtime::{FnAgent, RunContext, StopCondition, Thread};
///
/// let team = SelectorGroupChat::builder()
///     .participant(FnAgent::sync("planner", |_: &Thread| Ok("plan")))
///     .participant(FnAgent::sync("coder", |_: &Thread| Ok("code")))
///     // Always the coder after the planner, and the planner first.
///     .selector_fn(|input| Some(if input.previous == Some("planner") { "coder" } else { "planner" }.into()))
///     .stop_condition(StopCondition::max_messages(3))
///     .build()?;
/// let result = team.run_task("build it", &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "code");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SelectorGroupChat;

impl SelectorGroupChat {
    /// The name of the node that picks speakers; no participant may take it.
    pub const SELECTOR: &'static str = SELECTOR;

    /// The default selection prompt (AutoGen's, so teams moved over behave
    /// alike), for [`SelectorBuilder::prompt`] to extend: `{roles}` lists
    /// each candidate with its description, `{participants}` their names,
    /// `{history}` the conversation.
    pub const DEFAULT_PROMPT: &'static str = DEFAULT_SELECTOR_PROMPT;

    /// Starts describing a selector team.
    pub fn builder() -> SelectorBuilder {
        SelectorBuilder::default()
    }
}

/// Builds a [`SelectorGroupChat`] workflow.
pub struct SelectorBuilder {
    team: Team,
    model: Option<Arc<dyn ChatModel>>,
    selector_fn: Option<SelectorFn>,
    candidate_fn: Option<CandidateFn>,
    allow_repeated_speaker: bool,
    max_selector_attempts: u32,
    prompt: String,
    fallback: SpeakerFallback,
}

impl Default for SelectorBuilder {
    fn default() -> Self {
        SelectorBuilder {
            team: Team::default(),
            model: None,
            selector_fn: None,
            candidate_fn: None,
            allow_repeated_speaker: false,
            max_selector_attempts: 3,
            prompt: DEFAULT_SELECTOR_PROMPT.to_string(),
            fallback: SpeakerFallback::default(),
        }
    }
}

impl SelectorBuilder {
    team_methods!();

    /// The model that picks speakers.
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// A function that picks speakers; returning `None` lets the model
    /// decide.
    pub fn selector_fn(
        mut self,
        f: impl Fn(&SelectorInput<'_>) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.selector_fn = Some(Arc::new(f));
        self
    }

    /// A function narrowing the candidates for the next turn.
    pub fn candidate_fn(
        mut self,
        f: impl Fn(&SelectorInput<'_>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.candidate_fn = Some(Arc::new(f));
        self
    }

    /// Whether the same participant may speak twice in a row (default no).
    pub fn allow_repeated_speaker(mut self, allow: bool) -> Self {
        self.allow_repeated_speaker = allow;
        self
    }

    /// How often the model is asked before the fallback (default 3).
    pub fn max_selector_attempts(mut self, n: u32) -> Self {
        self.max_selector_attempts = n.max(1);
        self
    }

    /// What happens when the model names no valid speaker in
    /// `max_selector_attempts`: the next candidate in turn (the default)
    /// or a failed turn.
    pub fn fallback(mut self, fallback: SpeakerFallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// The selection prompt, with `{roles}`, `{participants}`, `{history}`.
    pub fn prompt(mut self, template: impl Into<String>) -> Self {
        self.prompt = template.into();
        self
    }

    /// Builds the team as a workflow.
    pub fn build(self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("selector_group_chat");
        let names = self.team.names();
        if names.is_empty() {
            return Err(PresetError::NoParticipants(name));
        }
        if names.iter().any(|n| n == SELECTOR) {
            return Err(PresetError::ReservedName {
                team: name,
                name: SELECTOR.into(),
            });
        }
        if self.model.is_none() && self.selector_fn.is_none() {
            return Err(PresetError::Missing {
                team: name,
                what: "a model or a selector function to pick speakers".into(),
            });
        }
        let selector = SelectorAgent {
            roles: self
                .team
                .agents
                .iter()
                .map(|a| (a.name().to_string(), a.description().to_string()))
                .collect(),
            names: names.clone(),
            model: self.model,
            selector_fn: self.selector_fn,
            candidate_fn: self.candidate_fn,
            allow_repeated_speaker: self.allow_repeated_speaker,
            max_attempts: self.max_selector_attempts,
            prompt: self.prompt,
            fallback: self.fallback,
        };
        let mut graph = Graph::builder()
            .add_agent(selector)
            .add_agents(self.team.agents.iter().cloned())
            .start(SELECTOR)
            // A conversation: bounded by the stop condition, not per loop.
            .loop_limit(u32::MAX);
        for n in &names {
            graph = graph
                .add_transition(SELECTOR, n.clone(), Condition::selected(n.clone()))
                .add_edge(n.clone(), SELECTOR);
        }
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph.build()?)
            .router(RouterBuilder::default());
        workflow = self.team.configure_conversation(workflow);
        Ok(workflow.build()?)
    }
}

/// The node that picks the next speaker.
struct SelectorAgent {
    roles: Vec<(String, String)>,
    names: Vec<String>,
    model: Option<Arc<dyn ChatModel>>,
    selector_fn: Option<SelectorFn>,
    candidate_fn: Option<CandidateFn>,
    allow_repeated_speaker: bool,
    max_attempts: u32,
    prompt: String,
    fallback: SpeakerFallback,
}

impl fmt::Debug for SelectorAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectorAgent")
            .field("participants", &self.names)
            .finish()
    }
}

#[async_trait]
impl Agent for SelectorAgent {
    fn name(&self) -> &str {
        SELECTOR
    }

    fn description(&self) -> &str {
        "picks the next speaker"
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let previous = thread
            .messages()
            .iter()
            .rev()
            .map(|m| &*m.source)
            .find(|s| self.names.iter().any(|n| n == s));
        let input = SelectorInput {
            thread: &thread,
            previous,
            participants: &self.names,
        };
        let mut candidates: Vec<String> = match &self.candidate_fn {
            Some(f) => f(&input)
                .into_iter()
                .filter(|c| self.names.contains(c))
                .collect(),
            None => self.names.clone(),
        };
        if candidates.is_empty() {
            candidates = self.names.clone();
        }
        if !self.allow_repeated_speaker && candidates.len() > 1 {
            candidates.retain(|c| Some(c.as_str()) != previous);
        }
        if let Some(f) = &self.selector_fn
            && let Some(choice) = f(&input)
        {
            if self.names.contains(&choice) {
                return Ok(Reply::select([choice]));
            }
            return Err(AgentError::failed(format!(
                "the selector function chose '{choice}', who is not a participant (participants: {})",
                self.names.join(", ")
            )));
        }
        if candidates.len() == 1 {
            return Ok(Reply::select(candidates));
        }
        let Some(model) = &self.model else {
            return Err(AgentError::failed(
                "the selector function left the choice to the model, but the team has no model",
            ));
        };
        let choice = self
            .ask_model(model.as_ref(), &thread, &candidates, previous, &ctx)
            .await?;
        // The model's picks stay in the selector's own thread (never
        // routed): its next request shows them, so the conversation it
        // is asked in is a function of the run's state, as every other
        // agent's is (a resumed run asks the same questions).
        Ok(Reply::select([choice.clone()]).with_private(vec![Message::text(SELECTOR, choice)]))
    }
}

impl SelectorAgent {
    async fn ask_model(
        &self,
        model: &dyn ChatModel,
        thread: &Thread,
        candidates: &[String],
        previous: Option<&str>,
        ctx: &RunContext,
    ) -> Result<String, AgentError> {
        let roles = self
            .roles
            .iter()
            .filter(|(n, _)| candidates.contains(n))
            .map(|(n, d)| format!("{n}: {d}"))
            .collect::<Vec<_>>()
            .join("\n");
        let history = thread
            .messages()
            .iter()
            .filter(|m| &*m.source != SELECTOR)
            .map(|m| format!("{}: {}", m.source, m.text_content()))
            .collect::<Vec<_>>()
            .join("\n");
        let participants = format!("[{}]", candidates.join(", "));
        let prompt = self
            .prompt
            .replace("{roles}", &roles)
            .replace("{participants}", &participants)
            .replace("{history}", &history);
        let mut messages = vec![ChatMessage::system(prompt)];
        // The earlier picks, as the exchange they were.
        let earlier: Vec<_> = thread
            .messages()
            .iter()
            .filter(|m| &*m.source == SELECTOR)
            .collect();
        for pick in &earlier {
            messages.push(ChatMessage::user(NEXT_SPEAKER));
            messages.push(ChatMessage::assistant(pick.text_content().into_owned()));
        }
        if !earlier.is_empty() {
            messages.push(ChatMessage::user(NEXT_SPEAKER));
        }
        let mut last = String::new();
        for _ in 0..self.max_attempts {
            // Metered and priced as any agent's call: events, usage, cost.
            let response = complete_metered(model, &ChatRequest::new(messages.clone()), ctx)
                .await
                .map_err(|e| AgentError::model(e.to_string()).with_source(e))?;
            let answer = response.text_content().to_string();
            let found = parse_speaker(&answer, candidates);
            if let SpeakerMatch::One(one) = found {
                return Ok(one);
            }
            messages.push(ChatMessage::assistant(answer.clone()));
            messages.push(ChatMessage::user(correction(&found, candidates)));
            last = answer;
        }
        let Some(fallback) = fallback_speaker(self.fallback, previous, &self.names, candidates)
        else {
            return Err(AgentError::failed(format!(
                "the selector's model named no valid speaker in {} attempts (last answer: '{last}'; valid: {})",
                self.max_attempts,
                candidates.join(", ")
            )));
        };
        ctx.emit_with(|| Event::Warning {
            path: ctx.path().clone(),
            text: format!(
                "the model named no valid speaker in {} attempts; '{fallback}' speaks",
                self.max_attempts
            ),
        });
        Ok(fallback)
    }
}
