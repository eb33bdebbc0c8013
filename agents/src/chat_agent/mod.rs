//! [`ChatAgent`]: an agent whose turns are a model's answers, with tools,
//! handoffs and structured output.

mod builder;
mod human;
mod model_call;
mod on_length;
mod tool_round;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use troupe_runtime::{
    Agent, AgentError, Content, Event, Message, Reply, RunContext, Thread, message::ToolCall,
    message::ToolResult, message::Usage,
};

use crate::context_policy::ContextPolicy;
use crate::conversation::ASSISTANT_TEXT;
use crate::model::{ChatMessage, ChatModel, ChatRequest, Pricing, ToolChoice, ToolDefinition};
use crate::structured::StructuredOutput;
use crate::tool::Tool;
use human::Resumed;

pub use builder::ChatAgentBuilder;
pub use on_length::{CONTINUE_PROMPT, OnLength};

/// An agent this one may hand the conversation to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffTarget {
    /// The agent's name.
    pub name: String,
    /// What it does (shown to the model in the handoff tool's description).
    pub description: String,
}

/// Where the tool calls and results of a turn go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMessages {
    /// Into the agent's own thread only (the default): the reply's messages
    /// are just the answer (text, structured output, or the handoff), so
    /// other agents never receive tool internals, while the agent's later
    /// turns still see them (and trim them down to their memories). The
    /// turn's whole token usage is on the answer. They travel as the
    /// reply's private messages ([`Reply::private`]).
    #[default]
    Private,
    /// Into the reply, before the answer: routed and shown like any other
    /// message. Each model call's usage is on the message it produced.
    Reply,
}

/// An agent backed by a chat model.
///
/// Each turn shows the model the system instructions and the thread (as
/// much as the [`ContextPolicy`] allows), then runs the **tool loop** (the
/// seed's feedback loop): when the model asks for tool calls, they run —
/// concurrently when there are several — and their results go back to the
/// model, up to `max_tool_iterations` rounds. A tool that fails gives the
/// model its error text as the result; it does not fail the turn.
///
/// **Handoffs**: every allowed target becomes a `transfer_to_<name>` tool;
/// calling it ends the turn with a [`Handoff`](troupe_runtime::message::Handoff)
/// message. If one answer calls several, the first in the model's order
/// wins and the others are answered "not transferred"; ordinary tool calls
/// of the same answer still run.
///
/// **Asking the user**: with [`ChatAgentBuilder::ask_user`] the model may
/// call the built-in `ask_user` tool (`{"question": string}`), and a tool
/// that [needs approval](crate::Tool::needs_approval) waits for the user's
/// yes. Such a call ends the turn with an input request
/// ([`Reply::ask`]): the question, or `approve <tool>(<arguments>)?
/// yes/no`. The round's other calls run first; its tool-call message and
/// the results so far stay in the agent's own thread. The next turn finds
/// the caller's answer (the user message the workflow delivers) and makes
/// it the call's result — the approved call runs, a denied one tells the
/// model the user said no — and the tool loop goes on. Several such calls
/// in one answer are asked about one at a time.
///
/// **Structured output**: with a schema, the final answer must be JSON
/// matching it; it is validated before it is returned (as
/// [`Content::Structured`]), and a wrong answer is sent back to the model
/// with what is wrong, `structured_retries` times, before the turn fails.
///
/// **Streaming**: with [`ChatAgentBuilder::streaming`] — or, not set,
/// whenever somebody listens to the run's events — the model answers as a
/// stream, and each piece is an event at the agent's path as it arrives
/// ([`Event::TextDelta`], [`Event::ToolArgumentsDelta`]), before the turn
/// ends; the answer is the same. Every model call is reported
/// ([`Event::ModelCallStarted`], [`Event::ModelCallFinished`]), retries of
/// the client as they happen ([`Event::ModelCallRetry`]), waits for the
/// model's shared rate limit ([`Event::ModelCallThrottled`]); a call whose
/// server reported no usage counts an estimate, marked so in its
/// `ModelCallFinished`.
///
/// The turn's tool-call and tool-result messages are kept in the agent's
/// own thread, or put in the reply before the answer ([`ToolMessages`]);
/// either way later turns see the history and trim raw results down to
/// their memories. The loop stops promptly when the run context is
/// cancelled.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
/// use troupe_runtime::{Agent, Message, RunContext, Thread};
///
/// let agent = ChatAgent::builder("greeter")
///     .instructions("Greet warmly.")
///     .model(ScriptedModel::new([ScriptedReply::text("Hello there!")]))
///     .build()?;
/// let thread = Arc::new(Thread::from_messages([Message::user("hi")]));
/// let reply = agent.run(thread, RunContext::new()).await?;
/// assert_eq!(reply.messages().last().unwrap().text_content(), "Hello there!");
/// # Ok(()) }
/// ```
pub struct ChatAgent {
    name: Arc<str>,
    description: String,
    instructions: Option<String>,
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    tool_index: HashMap<String, usize>,
    handoffs: Vec<HandoffTarget>,
    handoff_index: HashMap<String, usize>,
    definitions: Vec<ToolDefinition>,
    max_tool_iterations: usize,
    structured: Option<StructuredOutput>,
    structured_retries: usize,
    context: ContextPolicy,
    tool_timeout: Option<Duration>,
    /// Stream model calls; `None`: when somebody listens to events.
    streaming: Option<bool>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    tool_messages: ToolMessages,
    ask_user: bool,
    pricing: Option<Pricing>,
    on_length: OnLength,
}

impl fmt::Debug for ChatAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatAgent")
            .field("name", &self.name)
            .field("model", &self.model.model_name())
            .field(
                "tools",
                &self.definitions.iter().map(|d| &d.name).collect::<Vec<_>>(),
            )
            .field("max_tool_iterations", &self.max_tool_iterations)
            .field("context", &self.context)
            .finish()
    }
}

impl ChatAgent {
    /// Starts describing an agent named `name`.
    pub fn builder(name: impl Into<String>) -> ChatAgentBuilder {
        ChatAgentBuilder::new(name)
    }

    /// The system instructions.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The tools the model sees (handoff tools included), in order.
    pub fn tool_definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The agents this one may hand off to.
    pub fn handoff_targets(&self) -> &[HandoffTarget] {
        &self.handoffs
    }

    /// The request for the next model call.
    fn request(
        &self,
        thread: &Thread,
        produced: &[Message],
        corrections: &[ChatMessage],
        tools_allowed: bool,
        state: &troupe_runtime::state::StateSnapshot,
    ) -> ChatRequest {
        // The instructions with their placeholders filled for this call
        // (`None`: they hold none, and are used as written).
        let filled = self
            .instructions
            .as_deref()
            .and_then(|i| crate::placeholders::fill(i, &self.name, thread, state));
        let instructions = filled.as_deref().or(self.instructions.as_deref());
        let all = crate::context_policy::Messages {
            thread: thread.messages(),
            produced,
        };
        let policy = self.context_policy();
        // Room the instructions take, for a policy that counts tokens.
        let reserved = match (policy, instructions) {
            (ContextPolicy::TokenBudget(_) | ContextPolicy::ModelWindow, Some(i)) => {
                crate::context_policy::estimate_tokens(&ChatMessage::system(i.to_string()))
            }
            _ => 0,
        };
        let context = policy.apply(&self.name, all, reserved, !self.tools.is_empty());

        let mut system = instructions.unwrap_or_default().to_string();
        if !context.memories.is_empty() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(
                "Notes kept from earlier tool results (the full results are no longer shown):",
            );
            for memory in &context.memories {
                system.push_str("\n- ");
                system.push_str(memory);
            }
        }
        // The context's list has room for the system message in front.
        let mut messages = context.messages;
        messages.reserve(1 + corrections.len());
        if !system.is_empty() {
            messages.insert(0, ChatMessage::system(system));
        }
        messages.extend_from_slice(corrections);

        let mut request = ChatRequest::new(messages);
        if !self.definitions.is_empty() {
            // The tools stay declared on the last call so the history's
            // calls still make sense; the choice forbids new ones.
            request.tools = self.definitions.clone();
            request.tool_choice = Some(if tools_allowed {
                ToolChoice::Auto
            } else {
                ToolChoice::None
            });
        }
        request.response_format = self
            .structured
            .as_ref()
            .map(StructuredOutput::response_format);
        request.temperature = self.temperature;
        request.max_tokens = self.max_tokens;
        request
    }

    /// The context policy with the model's window put in: the default
    /// shows the newest messages that fit in the window, less the room
    /// kept for the answer.
    fn context_policy(&self) -> ContextPolicy {
        match self.context {
            ContextPolicy::ModelWindow => {
                let window = self
                    .model
                    .context_window()
                    .unwrap_or(crate::context_policy::DEFAULT_CONTEXT_WINDOW);
                let answer = self.max_tokens.map_or(0, |n| n as usize);
                ContextPolicy::TokenBudget(window.saturating_sub(answer))
            }
            other => other,
        }
    }

    /// The reply of a turn whose tool messages are `internal` and whose
    /// answer is `answer`; `total` is the whole turn's usage.
    fn reply(&self, mut internal: Vec<Message>, answer: Message, total: Option<Usage>) -> Reply {
        match self.tool_messages {
            ToolMessages::Reply => {
                internal.push(answer);
                Reply::from(internal)
            }
            ToolMessages::Private => {
                let mut answer = answer;
                answer.usage = total;
                if internal.is_empty() {
                    return Reply::message(answer);
                }
                for m in &mut internal {
                    m.usage = None; // counted once, on the answer
                }
                Reply::message(answer).with_private(internal)
            }
        }
    }

    fn cancelled(&self) -> AgentError {
        AgentError::cancelled()
    }
}

/// Gives calls in one answer distinct, non-empty ids (some servers repeat
/// or omit them), so each result answers exactly one call.
fn distinct_call_ids(calls: Vec<ToolCall>, round: usize) -> Vec<ToolCall> {
    let mut seen = std::collections::HashSet::new();
    calls
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            if call.id.is_empty() || !seen.insert(call.id.clone()) {
                call.id = format!("call_r{round}_{i}");
                seen.insert(call.id.clone());
            }
            call
        })
        .collect()
}

/// The result of a call that waited for the user when the round handed
/// the conversation off: it was never asked.
fn not_asked(call: &ToolCall, target: &str) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: format!("Error: not done: the conversation was handed off to {target}"),
        is_error: true,
        memory: None,
    }
}

/// What is wrong with a round whose results say the model called tools
/// (or handoffs) the agent does not have, if any did.
fn unknown_calls(agent: &str, results: &[ToolResult]) -> Option<String> {
    let unknown: Vec<&str> = results
        .iter()
        .filter(|r| r.is_error)
        .filter_map(|r| r.content.strip_prefix(tool_round::NO_SUCH_TOOL))
        .collect();
    (!unknown.is_empty()).then(|| format!("'{agent}' called {}", unknown.join(" and ")))
}

/// The error of a turn whose model, asked again after `problem`, failed
/// with `e`: the problem first, the failure after it (and as the source).
/// A cancelled turn stays cancelled, and a failure worth retrying stays
/// one.
fn asked_again(problem: &str, e: AgentError) -> AgentError {
    let text = format!("{problem}; asked again, the model failed: {e}");
    let error = match e.kind() {
        troupe_runtime::ErrorKind::Cancelled => return e,
        troupe_runtime::ErrorKind::Transient => AgentError::transient(text),
        _ => AgentError::model(text),
    };
    error.with_source(e)
}

fn add_usage(total: &mut Option<Usage>, usage: Option<Usage>) {
    if let Some(u) = usage {
        *total = Some(total.unwrap_or_default() + u);
    }
}

fn with_usage(message: Message, usage: Option<Usage>) -> Message {
    match usage {
        Some(u) => message.with_usage(u),
        None => message,
    }
}

#[async_trait]
impl Agent for ChatAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn handoffs(&self) -> Vec<String> {
        self.handoff_targets()
            .iter()
            .map(|h| h.name.clone())
            .collect()
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let mut produced: Vec<Message> = Vec::new();
        // Corrections of a structured answer are shown to the model but are
        // not part of the conversation.
        let mut corrections: Vec<ChatMessage> = Vec::new();
        let mut usage: Option<Usage> = None;
        let mut total: Option<Usage> = None;
        let mut rounds = 0;
        // What went wrong with the model's last answer (a structured answer
        // that failed its schema, a call of a tool or handoff it does not
        // have), while it is asked again: if asking again fails, that is
        // the turn's real cause, not the failed call alone.
        let mut unanswered: Option<String> = None;
        // Only an agent with tools (`ask_user` among them) leaves a round
        // waiting; one without spares the search back through its thread.
        if !self.definitions.is_empty()
            && let Some(pending) = human::pending_round(&self.name, &thread)
        {
            let resumed = ctx
                .run_until_cancelled(Box::pin(self.resume_round(pending, &thread, &ctx)))
                .await
                .ok_or_else(|| self.cancelled())??;
            match resumed {
                Resumed::Ask(reply) => return Ok(*reply),
                Resumed::Continue(results) => {
                    produced.push(results);
                    rounds = 1;
                }
            }
        }
        loop {
            if ctx.is_cancelled() {
                return Err(self.cancelled());
            }
            let tools_allowed = rounds < self.max_tool_iterations;
            let request =
                self.request(&thread, &produced, &corrections, tools_allowed, ctx.state());
            let span = crate::telemetry::chat_call_span(&ctx, &*self.model, &request);
            // Raced against the cancellation unless the turn's run drops
            // the turn when it is cancelled (see `run_until_cancelled`).
            let Some(response) = ctx.run_until_cancelled(self.answer(&request, &ctx)).await else {
                return Err(self.cancelled());
            };
            crate::telemetry::record_chat_end(&span, &response);
            drop(span); // the call's span ends with the call
            // `answer` counted each model call in the turn's meter.
            let response = match (response, unanswered.take()) {
                (Ok(response), _) => response,
                (Err(e), Some(problem)) => return Err(asked_again(&problem, e)),
                (Err(e), None) => return Err(e),
            };
            add_usage(&mut usage, response.usage);
            add_usage(&mut total, response.usage);

            if !response.tool_calls.is_empty() {
                if !tools_allowed {
                    let names: Vec<&str> = response
                        .tool_calls
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect();
                    return Err(AgentError::failed(format!(
                        "'{}' used all {} tool iterations and the model still asks for tools ({})",
                        self.name,
                        self.max_tool_iterations,
                        names.join(", ")
                    )));
                }
                rounds += 1;
                corrections.clear();
                let calls = distinct_call_ids(response.tool_calls, rounds);
                let mut message =
                    Message::new(self.name.clone(), Content::ToolCalls(calls.clone()));
                if let Some(text) = response.content.filter(|t| !t.trim().is_empty()) {
                    message = message.with_metadata(ASSISTANT_TEXT, text);
                }
                produced.push(with_usage(message, usage.take()));
                // Calls that wait for the user are asked about once the
                // others have run.
                let order: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
                let (waiting, now): (Vec<ToolCall>, Vec<ToolCall>) =
                    calls.into_iter().partition(|c| self.waits_for_user(c));
                for call in &waiting {
                    ctx.emit_with(|| Event::ToolCall {
                        path: ctx.path().clone(),
                        call: call.clone(),
                    });
                }
                let outcome = ctx
                    .run_until_cancelled(Box::pin(
                        self.run_tool_calls(&now, &thread, &produced, &ctx),
                    ))
                    .await
                    .ok_or_else(|| self.cancelled())??;
                let mut results = outcome.results;
                let asking = outcome.asking;
                unanswered = unknown_calls(&self.name, &results);
                if let Some(handoff) = outcome.handoff {
                    results.extend(waiting.iter().map(|c| not_asked(c, &handoff.target)));
                    results.extend(asking.iter().map(|(c, _)| not_asked(c, &handoff.target)));
                    produced.push(Message::new(
                        self.name.clone(),
                        Content::ToolResults(results),
                    ));
                    let answer =
                        Message::handoff(self.name.clone(), handoff.target, handoff.reason);
                    return Ok(self.reply(produced, answer, total));
                }
                // The first call left unanswered, in the model's order, is
                // the one the caller is asked about.
                let first_asked = order.iter().find_map(|id| {
                    if let Some(call) = waiting.iter().find(|c| &c.id == id) {
                        return Some(self.question_about(call));
                    }
                    asking
                        .iter()
                        .find(|(c, _)| &c.id == id)
                        .map(|(_, q)| q.clone())
                });
                if let Some(question) = first_asked {
                    if !results.is_empty() {
                        produced.push(Message::new(
                            self.name.clone(),
                            Content::ToolResults(results),
                        ));
                    }
                    return Ok(self.ask_for_tool(question, produced));
                }
                produced.push(Message::new(
                    self.name.clone(),
                    Content::ToolResults(results),
                ));
                continue;
            }

            let text = response.content.unwrap_or_default();
            let answer = match &self.structured {
                None => Message::text(self.name.clone(), text),
                Some(output) => match output.parse(&text) {
                    Ok(json) => Message::structured(self.name.clone(), json)
                        .with_metadata(troupe_runtime::graph::SCHEMA_KEY, output.name()),
                    Err(why) if corrections.len() / 2 < self.structured_retries => {
                        unanswered = Some(format!(
                            "'{}' gave no valid structured output: {why}",
                            self.name
                        ));
                        corrections.push(ChatMessage::assistant(text));
                        corrections.push(ChatMessage::user(format!(
                            "{why}. Answer again with only JSON matching the required schema."
                        )));
                        continue;
                    }
                    Err(why) => {
                        return Err(AgentError::model(format!(
                            "'{}' gave no valid structured output: {why}",
                            self.name
                        )));
                    }
                },
            };
            let answer = with_usage(answer, usage.take());
            return Ok(self.reply(produced, answer, total));
        }
    }
}
