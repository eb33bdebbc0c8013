//! [`A2aAgent`]: a remote A2A agent as a participant. Each turn sends the
//! messages new to it since its last turn, streams the remote task's
//! updates into troupe events, and answers with the task's artifacts.

use std::sync::Arc;

use async_trait::async_trait;
use troupe_runtime::{
    Agent, AgentError, Content, Message, Reply, RunContext, Thread, message::MessageId,
    message::USER,
};

use super::client::A2aClient;
use super::error::A2aError;
use super::exchange::Exchange;
use super::remote_task::Seen;
use super::types::{self, Role, SendMessageConfiguration, SendMessageRequest, TaskState};

/// Metadata key of the remote conversation (`contextId`) on the agent's
/// messages.
pub const CONTEXT_KEY: &str = "a2a.context_id";
/// Metadata key of the remote task on the agent's messages; on the private
/// message of a turn that ended asking, the task waiting for the answer.
pub const TASK_KEY: &str = "a2a.task_id";
/// Metadata key marking the private message of a turn that ended with the
/// remote task asking for input.
pub const WAITING_KEY: &str = "a2a.input_required";

/// A remote agent spoken to over A2A (JSON-RPC, protocol 1.0).
///
/// Each turn sends the messages of its thread that arrived since its last
/// turn (from the caller as they are; from other agents prefixed with
/// their name) as one A2A message in the conversation (`contextId`) the
/// remote agent gave at the first turn. When the card says it streams,
/// the turn reads `SendStreamingMessage`'s events: artifact pieces become
/// [`Event::TextDelta`](troupe_runtime::Event::TextDelta)s on the turn's context, as a model's tokens do.
/// The reply is the task's artifacts' text (or its status message).
///
/// A task that asks for input (`TASK_STATE_INPUT_REQUIRED`) ends the turn
/// with an input request ([`Reply::ask`]) whose prompt is the remote's
/// question; the answer, delivered to the agent's next turn, goes back as
/// a follow-up message of the same task. A cancelled run cancels the
/// remote task (`CancelTask`). A failed, rejected or cancelled remote task
/// fails the turn ([`A2aError::TaskFailed`]); an unreachable agent fails it
/// as a transient error, after the client's retries.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_agents::a2a::{A2aAgent, A2aClient};
/// use troupe_runtime::{Agent, Message, RunContext, Thread};
///
/// let client = A2aClient::builder("http://127.0.0.1:9999").build()?;
/// let remote = A2aAgent::new("remote", client);
/// let thread = Arc::new(Thread::from_messages([Message::user("hello")]));
/// let reply = remote.run(thread, RunContext::new()).await?;
/// println!("{}", reply.messages()[0].text_content());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct A2aAgent {
    name: String,
    description: String,
    client: Arc<A2aClient>,
}

impl A2aAgent {
    /// The agent behind `client`, known as `name`.
    pub fn new(name: impl Into<String>, client: A2aClient) -> Self {
        A2aAgent {
            name: name.into(),
            description: String::new(),
            client: Arc::new(client),
        }
    }

    /// Sets the description (else the card's, once read, is not used:
    /// descriptions are needed before the first turn).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The client it calls through.
    pub fn client(&self) -> &A2aClient {
        &self.client
    }

    /// The remote conversation and the task waiting for an answer, as
    /// this agent's last message with A2A metadata left them.
    fn remote_state(&self, thread: &Thread) -> (Option<String>, Option<String>) {
        let last = thread
            .messages()
            .iter()
            .rev()
            .find(|m| *m.source == *self.name && m.metadata.contains_key(CONTEXT_KEY));
        match last {
            Some(m) => (
                m.metadata.get(CONTEXT_KEY).cloned(),
                m.metadata
                    .contains_key(WAITING_KEY)
                    .then(|| m.metadata.get(TASK_KEY).cloned())
                    .flatten(),
            ),
            None => (None, None),
        }
    }

    /// The text of the messages since this agent's last one (the last
    /// message of the thread when there are none).
    fn new_text(&self, thread: &Thread) -> String {
        let messages = thread.messages();
        let since = messages
            .iter()
            .rposition(|m| *m.source == *self.name)
            .map_or(0, |i| i + 1);
        let render = |m: &Arc<Message>| -> Option<String> {
            let text = match &m.content {
                Content::Text(t) | Content::Structured(t) => t.clone(),
                _ => return None,
            };
            if text.trim().is_empty() {
                return None;
            }
            if *m.source == *USER || m.source.is_empty() {
                Some(text)
            } else {
                Some(format!("{}: {text}", m.source))
            }
        };
        let new: Vec<String> = messages[since..].iter().filter_map(render).collect();
        if new.is_empty() {
            messages.iter().rev().find_map(render).unwrap_or_default()
        } else {
            new.join("\n\n")
        }
    }

    /// The turn's reply, from what the exchange saw.
    fn reply(&self, seen: Seen) -> Result<Reply, A2aError> {
        let url = self.client.card_url().to_string();
        let context = seen.context_id.clone().unwrap_or_default();
        let task = seen.task_id.clone().unwrap_or_default();
        let status = seen.status.clone().unwrap_or_default();
        let said = status
            .message
            .as_ref()
            .map(types::A2aMessage::text)
            .unwrap_or_default();
        let tag = |m: Message| {
            m.with_metadata(CONTEXT_KEY, context.clone())
                .with_metadata(TASK_KEY, task.clone())
        };
        if let Some(direct) = seen.message {
            let text = direct.text();
            let context = direct.context_id.unwrap_or(context.clone());
            return Ok(Reply::message(
                Message::text(self.name.as_str(), text).with_metadata(CONTEXT_KEY, context),
            ));
        }
        match status.state {
            TaskState::Completed => {
                let text = seen
                    .artifacts_text()
                    .filter(|t| !t.is_empty())
                    .unwrap_or(said);
                Ok(Reply::message(tag(Message::text(self.name.as_str(), text))))
            }
            TaskState::InputRequired => {
                let question = if said.trim().is_empty() {
                    format!("{} needs more input", self.name)
                } else {
                    said
                };
                let marker = tag(Message::text(self.name.as_str(), question.clone()))
                    .with_metadata(WAITING_KEY, "true");
                Ok(Reply::ask(question).with_private(vec![marker]))
            }
            state => Err(A2aError::TaskFailed {
                url,
                task,
                state,
                message: if said.trim().is_empty() {
                    "(no message)".into()
                } else {
                    said
                },
            }),
        }
    }
}

#[async_trait]
impl Agent for A2aAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let (context_id, waiting) = self.remote_state(&thread);
        let mut message = types::A2aMessage::with_text(
            Role::User,
            format!("troupe-{}", MessageId::new()),
            self.new_text(&thread),
        );
        message.context_id = context_id;
        message.task_id = waiting;
        let request = SendMessageRequest {
            message,
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: vec!["text/plain".into()],
                ..SendMessageConfiguration::default()
            }),
            metadata: None,
        };
        // Dropped — this turn cancelled, or dropped by a cancelled run —
        // the exchange cancels the remote task.
        let mut exchange = Exchange::start(self.client.clone(), request, ctx.clone());
        tokio::select! {
            biased;
            _ = ctx.cancelled() => Err(AgentError::cancelled()),
            seen = exchange.finish() => Ok(self.reply(seen?)?),
        }
    }
}
