//! [`UserProxy`]: an agent whose answer comes from the caller — a
//! callback, a channel, a terminal, or an input request to whoever runs
//! the workflow.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc, oneshot};
use troupe_runtime::{Agent, AgentError, Content, Reply, RunContext, Thread};

use crate::conversation::is_answer;
use crate::error::NotWaiting;

type Callback = dyn Fn(Arc<Thread>) -> BoxFuture<'static, Result<String, AgentError>> + Send + Sync;

/// A turn waiting for the caller's answer (see [`UserProxy::channel`]).
#[derive(Debug)]
pub struct UserRequest {
    /// The proxy's thread: what the user is answering.
    pub thread: Arc<Thread>,
    answer: oneshot::Sender<String>,
}

impl UserRequest {
    /// The text of the last message (usually the question).
    pub fn prompt(&self) -> String {
        self.thread
            .last()
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default()
    }

    /// Answers; the proxy's turn ends with this text. Fails (giving the
    /// text back) if the turn is no longer waiting.
    pub fn respond(self, text: impl Into<String>) -> Result<(), NotWaiting> {
        self.answer.send(text.into()).map_err(NotWaiting::new)
    }
}

/// The caller's end of a channel proxy: requests arrive here.
#[derive(Debug)]
pub struct UserProxyHandle {
    requests: mpsc::Receiver<UserRequest>,
}

impl UserProxyHandle {
    /// The next turn waiting for an answer; `None` once the proxy is gone.
    pub async fn next(&mut self) -> Option<UserRequest> {
        self.requests.recv().await
    }
}

type Lines = (
    Box<dyn AsyncBufRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
);

enum Source {
    Callback(Box<Callback>),
    Channel(mpsc::Sender<UserRequest>),
    Lines(Mutex<Lines>),
    Ask,
}

/// An agent that asks the caller: its reply is the caller's text.
///
/// Four ways to answer: a callback (for tests and GUIs), a channel (the
/// caller gets a [`UserRequest`] per turn and responds when ready), lines
/// of text (a terminal: the last message is printed and a line read;
/// [`UserProxy::stdin`]), or an input request ([`UserProxy::ask`]): the
/// turn ends with [`Reply::ask`], the run waits for input (with a
/// checkpoint), and the answer given to the workflow's `respond` becomes
/// the proxy's message — AutoGen's `UserProxyAgent` in a durable run. When
/// the input of a terminal ends, the proxy replies with a
/// [`Content::Stop`] instead of text.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use troupe_agents::UserProxy;
/// use troupe_runtime::{Agent, Message, RunContext, Thread};
///
/// let (proxy, mut handle) = UserProxy::channel("human");
/// tokio::spawn(async move {
///     while let Some(request) = handle.next().await {
///         let answer = format!("yes to '{}'", request.prompt());
///         let _ = request.respond(answer);
///     }
/// });
/// let thread = Arc::new(Thread::from_messages([Message::text("bot", "Ship it?")]));
/// let reply = proxy.run(thread, RunContext::new()).await?;
/// assert_eq!(reply.messages()[0].text_content(), "yes to 'Ship it?'");
/// # Ok(()) }
/// ```
pub struct UserProxy {
    name: String,
    description: String,
    source: Source,
    timeout: Option<Duration>,
    prompt: Option<String>,
}

impl fmt::Debug for UserProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            Source::Callback(_) => "callback",
            Source::Channel(_) => "channel",
            Source::Lines(_) => "lines",
            Source::Ask => "ask",
        };
        f.debug_struct("UserProxy")
            .field("name", &self.name)
            .field("source", &source)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl UserProxy {
    fn with_source(name: impl Into<String>, source: Source) -> Self {
        UserProxy {
            name: name.into(),
            description: "A human: asks the user and relays the answer.".into(),
            source,
            timeout: None,
            prompt: None,
        }
    }

    /// A proxy answering with `answer(thread)`.
    pub fn new<F, Fut>(name: impl Into<String>, answer: F) -> Self
    where
        F: Fn(Arc<Thread>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, AgentError>> + Send + 'static,
    {
        Self::with_source(
            name,
            Source::Callback(Box::new(move |thread| Box::pin(answer(thread)))),
        )
    }

    /// A proxy whose turns are sent to the returned handle.
    pub fn channel(name: impl Into<String>) -> (Self, UserProxyHandle) {
        let (tx, rx) = mpsc::channel(8);
        (
            Self::with_source(name, Source::Channel(tx)),
            UserProxyHandle { requests: rx },
        )
    }

    /// A proxy writing the last message to `output` and reading one line of
    /// `input` per turn.
    pub fn lines(
        name: impl Into<String>,
        input: impl AsyncBufRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        Self::with_source(
            name,
            Source::Lines(Mutex::new((Box::new(input), Box::new(output)))),
        )
    }

    /// A proxy on the terminal: stdout and stdin.
    pub fn stdin(name: impl Into<String>) -> Self {
        Self::lines(
            name,
            tokio::io::BufReader::new(tokio::io::stdin()),
            tokio::io::stdout(),
        )
    }

    /// A proxy whose turn asks whoever runs the workflow: it ends with an
    /// input request ([`Reply::ask`]) whose prompt is the last message's
    /// text (or [`with_prompt`](Self::with_prompt)'s), and when the answer
    /// arrives (the user message the workflow delivers to this
    /// participant), the next turn replies with its text.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use troupe_agents::UserProxy;
    /// use troupe_runtime::{RunContext, RunStatus, Workflow};
    ///
    /// let team = Workflow::builder()
    ///     .name("desk")
    ///     .participant(UserProxy::ask("human").with_prompt("Which date?"))
    ///     .build()?;
    /// let ctx = RunContext::new();
    /// let waiting = team.run_task("book a table", &ctx).await?;
    /// let RunStatus::WaitingForInput(requests) = &waiting.status else { panic!() };
    /// assert_eq!(requests[0].prompt, "Which date?");
    /// let done = team.respond_in_thread(waiting.thread, &requests[0].id, "Friday", &ctx).await?;
    /// assert_eq!(done.final_text(), "Friday");
    /// # Ok(()) }
    /// ```
    pub fn ask(name: impl Into<String>) -> Self {
        Self::with_source(name, Source::Ask)
    }

    /// What the proxy shows the user instead of the last message (an
    /// asking proxy's prompt; a terminal's text before the `>`).
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Fails a turn that gets no answer within `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// An asking proxy's turn: the answer that arrived since its last
    /// message, or the question.
    fn ask_turn(&self, thread: &Thread) -> Reply {
        let answer = thread
            .messages()
            .iter()
            .rev()
            .take_while(|m| *m.source != *self.name)
            .find(|m| is_answer(m));
        if let Some(answer) = answer {
            return Reply::text(answer.text_content().into_owned());
        }
        let prompt = match &self.prompt {
            Some(p) => p.clone(),
            None => thread
                .last()
                .map(|m| m.text_content().into_owned())
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| format!("{}, your turn:", self.name)),
        };
        Reply::ask(prompt)
    }

    /// The answer, or `None` when the input has ended. (An asking proxy's
    /// answer comes in its thread: see [`UserProxy::ask_turn`].)
    async fn answer(&self, thread: Arc<Thread>) -> Result<Option<String>, AgentError> {
        match &self.source {
            Source::Ask => Err(AgentError::failed(format!(
                "'{}' asks through the workflow's input requests, not here",
                self.name
            ))),
            Source::Callback(f) => f(thread).await.map(Some),
            Source::Channel(tx) => {
                let (answer, rx) = oneshot::channel();
                let gone = || AgentError::failed(format!("nobody answers for '{}'", self.name));
                tx.send(UserRequest { thread, answer })
                    .await
                    .map_err(|_| gone())?;
                rx.await.map(Some).map_err(|_| gone())
            }
            Source::Lines(io) => {
                let mut io = io.lock().await;
                let (input, output) = &mut *io;
                let prompt = match &self.prompt {
                    Some(p) => format!("{p}\n"),
                    None => thread
                        .last()
                        .map(|m| format!("{}: {}\n", m.source, m.text_content()))
                        .unwrap_or_default(),
                };
                let io_error = |e: std::io::Error| {
                    AgentError::failed(format!("'{}' cannot talk to the user: {e}", self.name))
                        .with_source(e)
                };
                output
                    .write_all(format!("{prompt}{}> ", self.name).as_bytes())
                    .await
                    .map_err(io_error)?;
                output.flush().await.map_err(io_error)?;
                let mut line = String::new();
                let read = input.read_line(&mut line).await.map_err(io_error)?;
                if read == 0 {
                    return Ok(None);
                }
                Ok(Some(line.trim_end_matches(['\n', '\r']).to_string()))
            }
        }
    }
}

#[async_trait]
impl Agent for UserProxy {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        if let Source::Ask = self.source {
            return Ok(self.ask_turn(&thread));
        }
        let answer = async {
            match self.timeout {
                Some(after) => tokio::time::timeout(after, self.answer(thread))
                    .await
                    .map_err(|_| AgentError::timeout(after))?,
                None => self.answer(thread).await,
            }
        };
        let answer = tokio::select! {
            biased;
            _ = ctx.cancelled() => return Err(AgentError::failed(format!("'{}' was cancelled", self.name))),
            answer = answer => answer?,
        };
        Ok(match answer {
            Some(text) => Reply::text(text),
            None => Reply::from(Content::Stop("the user closed the input".into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_runtime::Message;

    #[tokio::test]
    async fn lines_prompt_and_read_until_the_input_ends() {
        let (out_tx, mut out_rx) = tokio::io::duplex(1024);
        let proxy = UserProxy::lines("me", &b"first answer\r\n"[..], out_tx);
        let thread = Arc::new(Thread::from_messages([Message::text("bot", "Question?")]));
        let reply = proxy.run(thread.clone(), RunContext::new()).await.unwrap();
        assert_eq!(reply.messages()[0].text_content(), "first answer");
        let reply = proxy.run(thread, RunContext::new()).await.unwrap();
        assert!(matches!(reply.messages()[0].content, Content::Stop(_)));
        drop(proxy);
        let mut shown = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_rx, &mut shown)
            .await
            .unwrap();
        assert!(shown.starts_with("bot: Question?\nme> "), "{shown:?}");
    }

    #[tokio::test]
    async fn callbacks_timeouts_and_lost_handles() {
        let proxy = UserProxy::new("cb", |t: Arc<Thread>| async move {
            Ok(format!("{} seen", t.len()))
        });
        let reply = proxy
            .run(Arc::new(Thread::new()), RunContext::new())
            .await
            .unwrap();
        assert_eq!(reply.messages()[0].text_content(), "0 seen");

        let (proxy, handle) = UserProxy::channel("slow");
        let proxy = proxy.with_timeout(Duration::from_millis(20));
        let e = proxy
            .run(Arc::new(Thread::new()), RunContext::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), troupe_runtime::ErrorKind::Timeout, "{e}");
        drop(handle);
        let e = proxy
            .run(Arc::new(Thread::new()), RunContext::new())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("nobody answers"), "{e}");
    }

    #[tokio::test]
    async fn an_asking_proxy_asks_until_an_answer_follows_its_last_word() {
        let proxy = UserProxy::ask("me");
        let answer = Message::user("Friday").with_metadata("troupe.request", "me-1");
        let mut thread = Thread::from_messages([Message::text("bot", "Which day?")]);
        let reply = proxy
            .run(Arc::new(thread.clone()), RunContext::new())
            .await
            .unwrap();
        assert_eq!(reply.request(), Some("Which day?"));
        assert!(reply.messages().is_empty());

        thread.push(answer);
        let reply = proxy
            .run(Arc::new(thread.clone()), RunContext::new())
            .await
            .unwrap();
        assert_eq!(reply.request(), None);
        assert_eq!(reply.messages()[0].text_content(), "Friday");

        // Its own word came after that answer: the next turn asks again.
        thread.push(Message::text("me", "Friday"));
        thread.push(Message::text("bot", "Which time?"));
        let reply = proxy
            .with_prompt("Your answer?")
            .run(Arc::new(thread), RunContext::new())
            .await
            .unwrap();
        assert_eq!(reply.request(), Some("Your answer?"));
    }
}
