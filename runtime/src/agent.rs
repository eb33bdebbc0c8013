//! The [`Agent`] trait — the centre of troupe — and what a turn gives back.

use std::sync::Arc;

use async_trait::async_trait;

// Where the rest of the crate has always found them.
use crate::context::RunContext;
use crate::message::{Content, Message};
use crate::resumable::request::InputRequest;
pub(crate) use crate::run_error::{AgentError, ErrorKind};
use crate::state::StateDelta;
use crate::thread::Thread;

/// Anything with a name, a description and an async `run` over a thread.
///
/// A turn is given the agent's thread (everything it should see, its inbox
/// already drained into it) and a [`RunContext`], and returns a [`Reply`]:
/// the new messages, the last of which is its response. The engine appends
/// them to the thread, stamps them with the agent's name as their source and
/// routes them on; an agent never appends to its own thread.
///
/// A [`Workflow`](crate::Workflow) is an `Agent` too, so workflows nest.
///
/// ```
/// use std::sync::Arc;
/// use troupe_runtime::{async_trait, Agent, AgentError, Reply, RunContext, Thread};
///
/// struct Echo;
///
/// #[async_trait]
/// impl Agent for Echo {
///     fn name(&self) -> &str { "echo" }
///     async fn run(&self, thread: Arc<Thread>, _ctx: RunContext) -> Result<Reply, AgentError> {
///         let last = thread.last().map(|m| m.text_content().into_owned()).unwrap_or_default();
///         Ok(Reply::text(last))
///     }
/// }
/// ```
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// The agent's name, unique within a workflow.
    fn name(&self) -> &str;

    /// What the agent does, for selectors and tool descriptions.
    fn description(&self) -> &str {
        ""
    }

    /// The agents this one can hand control to (for swarms to check and
    /// draw transitions); empty for agents that never hand off.
    fn handoffs(&self) -> Vec<String> {
        Vec::new()
    }

    /// Takes one turn over `thread`.
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError>;
}

#[async_trait]
impl<A: Agent + ?Sized> Agent for Arc<A> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn description(&self) -> &str {
        (**self).description()
    }
    fn handoffs(&self) -> Vec<String> {
        (**self).handoffs()
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        (**self).run(thread, ctx).await
    }
}

/// What one turn produced: new messages, the last of which is the agent's
/// response, and what else the turn asks of the run — the node(s) to run
/// next ([`Reply::select`]), a question for the caller ([`Reply::ask`]),
/// messages for the agent's own thread only ([`Reply::with_private`]),
/// changes to the run's state ([`Reply::with_state`]).
///
/// Build one with its constructors and `with_` methods; read it with its
/// accessors. A crate that moves replies whole (across a wire) takes them
/// apart with [`Reply::into_parts`] and back with [`Reply::from_parts`].
///
/// ```
/// use troupe_runtime::{Message, Reply};
///
/// let reply = Reply::text("done").with_next(["review"]).with_state("step", "2");
/// assert_eq!(reply.messages()[0].text_content(), "done");
/// assert_eq!(reply.next(), Some(&["review".to_string()][..]));
/// let many = Reply::from(vec![Message::text("", "a"), Message::text("", "b")]);
/// assert_eq!(many.into_messages().len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub(crate) messages: Vec<Message>,
    pub(crate) thread: Option<Thread>,
    pub(crate) next: Option<Vec<String>>,
    pub(crate) request: Option<String>,
    pub(crate) private: Vec<Message>,
    pub(crate) inner_requests: Vec<InputRequest>,
    pub(crate) state: StateDelta,
}

/// A [`Reply`] taken apart, every field public: for crates that carry a
/// reply whole (the cluster's wire) and put it back together with
/// [`Reply::from_parts`]. Agents build replies with [`Reply`]'s methods.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReplyParts {
    /// New messages, in order; the last is the agent's response.
    pub messages: Vec<Message>,
    /// A replacement for the agent's thread (before the new messages are
    /// appended). Workflows use it to keep their children and state.
    pub thread: Option<Thread>,
    /// The node(s) the agent chose to run next, for graph transitions with
    /// [`Condition::Selected`](crate::graph::Condition::Selected): how a selector
    /// steers a group chat without adding to the conversation.
    pub next: Option<Vec<String>>,
    /// A question for the caller: the run ends waiting for input (with a
    /// checkpoint), and resumes with the answer delivered to this agent.
    pub request: Option<String>,
    /// Messages for the agent's own thread only, appended before
    /// `messages`: never routed, not part of the conversation (a tool
    /// loop's calls and results, kept for the agent's later turns).
    pub private: Vec<Message>,
    /// The questions still open inside the agent — a nested workflow
    /// waiting for input — under the ids they have there. The outer run
    /// keeps them (replacing what this agent reported before), under the
    /// agent's name, `/`, and that id, and ends waiting for input; the
    /// answer to one comes back to the agent as input tagged with its id.
    pub inner_requests: Vec<InputRequest>,
    /// What the turn changes in the run's state (see [`RunContext::state`]):
    /// applied by the run when it applies the reply, before the graph's
    /// conditions are judged.
    pub state: StateDelta,
}

impl Reply {
    /// A reply with no message.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A reply of one text message.
    pub fn text(text: impl Into<String>) -> Self {
        Self::message(Message::new("", Content::Text(text.into())))
    }

    /// A reply of one message (of several: `Reply::from(vec)`).
    pub fn message(message: Message) -> Self {
        Reply {
            messages: vec![message],
            ..Default::default()
        }
    }

    /// A reply choosing the node(s) to run next, with no message.
    pub fn select<S: Into<String>>(next: impl IntoIterator<Item = S>) -> Self {
        Self::default().with_next(next)
    }

    /// A reply asking the caller a question (human in the loop).
    pub fn ask(prompt: impl Into<String>) -> Self {
        Self::default().with_request(prompt)
    }

    /// Chooses the node(s) to run next, for graph transitions with
    /// [`Condition::Selected`](crate::graph::Condition::Selected).
    pub fn with_next<S: Into<String>>(mut self, next: impl IntoIterator<Item = S>) -> Self {
        self.next = Some(next.into_iter().map(Into::into).collect());
        self
    }

    /// Asks the caller a question: the run ends waiting for input, and
    /// resumes with the answer delivered to this agent.
    pub fn with_request(mut self, prompt: impl Into<String>) -> Self {
        self.request = Some(prompt.into());
        self
    }

    /// Sets the messages for the agent's own thread only, appended before
    /// the reply's messages: never routed, not part of the conversation (a
    /// tool loop's calls and results, kept for the agent's later turns).
    pub fn with_private(mut self, private: Vec<Message>) -> Self {
        self.private = private;
        self
    }

    /// Sets run-state `key` to `value` (JSON text, if the value is
    /// structured): turns that start after this reply is applied see it
    /// in [`RunContext::state`], and the run's thread keeps it.
    ///
    /// ```
    /// use troupe_runtime::Reply;
    /// let reply = Reply::text("drafted").with_state("draft.words", "120");
    /// assert_eq!(reply.state().iter().collect::<Vec<_>>(), [("draft.words", Some("120"))]);
    /// ```
    pub fn with_state(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.state = std::mem::take(&mut self.state).set(key, value);
        self
    }

    /// Removes run-state `key` (see [`Reply::with_state`]).
    pub fn without_state(mut self, key: impl Into<String>) -> Self {
        self.state = std::mem::take(&mut self.state).remove(key);
        self
    }

    /// Adds the changes of `delta` to the reply's (see [`Reply::with_state`]).
    pub fn with_state_delta(mut self, delta: StateDelta) -> Self {
        self.state.merge(delta);
        self
    }

    /// Sets a replacement for the agent's thread (before the new messages
    /// are appended): how a workflow keeps its children and state.
    pub fn with_thread(mut self, thread: Thread) -> Self {
        self.thread = Some(thread);
        self
    }

    /// The new messages, in order; the last is the agent's response.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The new messages, to change (a wrapper adding to an agent's answer).
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        &mut self.messages
    }

    /// Takes the new messages out of the reply.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The node(s) the agent chose to run next, if it chose.
    pub fn next(&self) -> Option<&[String]> {
        self.next.as_deref()
    }

    /// The question for the caller, if the agent asks one.
    pub fn request(&self) -> Option<&str> {
        self.request.as_deref()
    }

    /// The messages for the agent's own thread only.
    pub fn private(&self) -> &[Message] {
        &self.private
    }

    /// What the turn changes in the run's state.
    pub fn state(&self) -> &StateDelta {
        &self.state
    }

    /// The replacement for the agent's thread, if the turn gave one.
    pub fn thread(&self) -> Option<&Thread> {
        self.thread.as_ref()
    }

    /// The questions still open inside the agent (a nested workflow waiting
    /// for input), under the ids they have there: the outer run keeps them
    /// and ends waiting for input. Empty for a turn that is done.
    pub fn inner_requests(&self) -> &[InputRequest] {
        &self.inner_requests
    }

    /// The reply's parts, every one public (see [`ReplyParts`]).
    pub fn into_parts(self) -> ReplyParts {
        ReplyParts {
            messages: self.messages,
            thread: self.thread,
            next: self.next,
            request: self.request,
            private: self.private,
            inner_requests: self.inner_requests,
            state: self.state,
        }
    }

    /// The reply of `parts` (made by [`Reply::into_parts`]).
    pub fn from_parts(parts: ReplyParts) -> Self {
        Reply {
            messages: parts.messages,
            thread: parts.thread,
            next: parts.next,
            request: parts.request,
            private: parts.private,
            inner_requests: parts.inner_requests,
            state: parts.state,
        }
    }
}

impl From<String> for Reply {
    fn from(s: String) -> Self {
        Reply::text(s)
    }
}
impl From<&str> for Reply {
    fn from(s: &str) -> Self {
        Reply::text(s)
    }
}
impl From<Message> for Reply {
    fn from(m: Message) -> Self {
        Reply::message(m)
    }
}
impl From<Vec<Message>> for Reply {
    fn from(messages: Vec<Message>) -> Self {
        Reply {
            messages,
            ..Default::default()
        }
    }
}
impl From<()> for Reply {
    fn from(_: ()) -> Self {
        Reply::empty()
    }
}
impl From<Content> for Reply {
    fn from(c: Content) -> Self {
        Reply::message(Message::new("", c))
    }
}

/// An agent under another name: the same agent can then take part several
/// times in one workflow (a map's workers, replicas).
///
/// ```
/// use troupe_runtime::{Agent, FnAgent, Renamed, Thread};
/// let worker = std::sync::Arc::new(FnAgent::sync("worker", |_: &Thread| Ok("done")));
/// let first = Renamed::new("worker#1", worker.clone());
/// assert_eq!(first.name(), "worker#1");
/// ```
pub struct Renamed {
    name: String,
    inner: Arc<dyn Agent>,
}

impl Renamed {
    /// `inner`, known as `name`.
    pub fn new(name: impl Into<String>, inner: Arc<dyn Agent>) -> Self {
        Renamed {
            name: name.into(),
            inner,
        }
    }
}

impl std::fmt::Debug for Renamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renamed")
            .field("name", &self.name)
            .field("inner", &self.inner.name())
            .finish()
    }
}

#[async_trait]
impl Agent for Renamed {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn handoffs(&self) -> Vec<String> {
        self.inner.handoffs()
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        self.inner.run(thread, ctx).await
    }
}
