//! The crate's errors: what a model call, a tool call or building an agent
//! can fail with.

use std::time::Duration;

use troupe_runtime::AgentError;

use crate::json_schema::SchemaError;

/// A model call failed.
///
/// Every variant that involves a server names the endpoint; none carries
/// the API key (bodies echoed back by a server are redacted).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The server answered with an error status.
    #[error("{endpoint} answered HTTP {status}: {body}")]
    Status {
        /// The URL called.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
        /// How long the server asked us to wait before trying again.
        retry_after: Option<Duration>,
    },
    /// The server could not be reached (or the connection dropped).
    #[error("cannot reach {endpoint}: {message}")]
    Connect {
        /// The URL called.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
    /// The server did not answer in time.
    #[error("{endpoint} did not answer within {after:?}")]
    Timeout {
        /// The URL called.
        endpoint: String,
        /// The time allowed.
        after: Duration,
    },
    /// The response could not be understood.
    #[error("cannot read the response of {endpoint}: {message} (body: {body})")]
    Decode {
        /// The URL called.
        endpoint: String,
        /// What was wrong with it.
        message: String,
        /// The start of the body.
        body: String,
    },
    /// The server reported an error inside a successful response (or a stream).
    #[error("{endpoint} reported an error: {message}")]
    Api {
        /// The URL called.
        endpoint: String,
        /// The server's error message.
        message: String,
    },
    /// A streamed response broke off.
    #[error("the stream from {endpoint} broke off: {message}")]
    Stream {
        /// The URL called.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
    /// A retryable failure persisted through every attempt.
    #[error("gave up on {endpoint} after {attempts} attempts; last error: {last}")]
    RetriesExhausted {
        /// The URL called.
        endpoint: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<ModelError>,
    },
    /// The answer was cut off at the token limit (`finish_reason: length`).
    #[error(
        "the answer of model '{model}' was cut off at {} (finish_reason: length): raise `max_tokens`, or set `on_length: continue` on the model to have it go on",
        match max_tokens { Some(n) => format!("max_tokens ({n})"), None => "the model's token limit".to_string() }
    )]
    Truncated {
        /// The model that answered.
        model: String,
        /// The cap the request set, if it set one.
        max_tokens: Option<u32>,
    },
    /// Every model of a fallback chain failed (or was cooling down).
    #[error("every model failed: {}", tried.join("; "))]
    FallbackExhausted {
        /// Each model tried, with how it failed (`name: error`), in order.
        tried: Vec<String>,
        /// The last model's error.
        last: Box<ModelError>,
    },
    /// The client is misconfigured (missing key, bad URL, bad header).
    #[error("model client configuration: {0}")]
    Config(String),
    /// A scripted model was asked for more replies than it holds.
    #[error(
        "scripted model '{model}' is exhausted: call {call} asked for a reply but the script holds only {replies} (it ran out of replies: add replies, or set `when_exhausted` to `repeat_last` or `cycle`)"
    )]
    ScriptExhausted {
        /// The scripted model's name.
        model: String,
        /// How many replies the script held.
        replies: usize,
        /// The call that found it empty (1-based).
        call: usize,
    },
    /// Any other failure (for example one a scripted reply simulates).
    #[error("{0}")]
    Other(String),
}

impl ModelError {
    /// Whether trying again may succeed: rate limits (429), request
    /// timeouts (408), server errors (5xx), connection failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Status { status, .. } => {
                *status == 429 || *status == 408 || (500..=599).contains(status)
            }
            ModelError::Connect { .. } | ModelError::Timeout { .. } => true,
            _ => false,
        }
    }

    /// The wait the server asked for, if it did (on the last attempt, for
    /// [`ModelError::RetriesExhausted`]).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Status { retry_after, .. } => *retry_after,
            ModelError::RetriesExhausted { last, .. }
            | ModelError::FallbackExhausted { last, .. } => last.retry_after(),
            _ => None,
        }
    }
}

/// A failure that may pass (retried and still failing, rate limits, lost
/// connections) becomes [`ErrorKind::Transient`](troupe_runtime::ErrorKind::Transient), so a workflow's retry
/// policy can try the turn again later; anything else is
/// [`ErrorKind::Model`](troupe_runtime::ErrorKind::Model). Either way the `ModelError` itself is kept as the
/// error's source, `Retry-After` and all:
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::ModelError;
/// use troupe_runtime::{AgentError, ErrorKind};
///
/// let limited = ModelError::Status {
///     endpoint: "https://api.example/v1/chat/completions".into(),
///     status: 429,
///     body: "slow down".into(),
///     retry_after: Some(Duration::from_secs(7)),
/// };
/// let e = AgentError::from(limited);
/// assert_eq!(e.kind(), ErrorKind::Transient);
/// let cause = e.downcast_source::<ModelError>().unwrap();
/// assert_eq!(cause.retry_after(), Some(Duration::from_secs(7)));
/// ```
impl From<ModelError> for AgentError {
    fn from(e: ModelError) -> Self {
        let passing = match &e {
            ModelError::RetriesExhausted { .. } => true,
            ModelError::FallbackExhausted { last, .. } => {
                last.is_retryable() || matches!(**last, ModelError::RetriesExhausted { .. })
            }
            other => other.is_retryable(),
        };
        let error = if passing {
            AgentError::transient(format!("model call failed: {e}"))
        } else {
            AgentError::model(e.to_string())
        };
        error.with_source(e)
    }
}

/// A tool call failed.
///
/// Except for [`ToolError::Fatal`], a failed call does not end the agent's
/// turn: its text goes back to the model as the call's (error) result, so
/// the model can correct itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model's arguments do not fit the tool's parameters.
    #[error("invalid arguments for tool '{tool}': {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        message: String,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool did not finish in time.
    #[error("tool '{tool}' did not finish within {after:?}")]
    Timeout {
        /// The tool.
        tool: String,
        /// The time allowed.
        after: Duration,
    },
    /// A failure that must end the agent's turn rather than go back to the model.
    #[error("{0}")]
    Fatal(String),
    /// The call cannot go on without the user's answer to this question
    /// (an MCP server's elicitation). The agent's turn ends waiting for
    /// input; the answer calls the tool again with every answer so far in
    /// [`ToolContext::answers`](crate::ToolContext::answers).
    #[error("the call waits for the user's answer to: {0}")]
    NeedsInput(String),
}

impl ToolError {
    /// A failure with this text, shown to the model.
    pub fn failed(text: impl Into<String>) -> Self {
        ToolError::Failed(text.into())
    }
}

/// Talking to an MCP server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server could not be started or connected to.
    #[error("cannot connect to MCP server '{server}': {message}")]
    Connect {
        /// The server's configured name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The server did not answer in time.
    #[error("MCP server '{server}' did not answer {operation} within {after:?}")]
    Timeout {
        /// The server's configured name.
        server: String,
        /// What was asked (`initialize`, `tools/list`, `tools/call x`).
        operation: String,
        /// The time allowed.
        after: Duration,
    },
    /// The connection is gone: the server exited, crashed or hung up.
    #[error("MCP server '{server}' is gone ({operation}): {message}")]
    Disconnected {
        /// The server's configured name.
        server: String,
        /// What was being asked.
        operation: String,
        /// What the transport said.
        message: String,
    },
    /// The server answered a request with an error.
    #[error("MCP server '{server}' refused {operation}: {message}")]
    Server {
        /// The server's configured name.
        server: String,
        /// What was asked.
        operation: String,
        /// The server's error.
        message: String,
    },
    /// The tool is not among the ones this client may use.
    #[error("MCP server '{server}': tool '{tool}' is not in the allow-list")]
    NotAllowed {
        /// The server's configured name.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The allow-list names tools the server does not offer.
    #[error(
        "MCP server '{server}' has no tool {}: `tools` names it, but the server offers {}",
        quoted(unknown),
        quoted(offered)
    )]
    UnknownTools {
        /// The server's configured name.
        server: String,
        /// The names it does not offer.
        unknown: Vec<String>,
        /// The tools it offers.
        offered: Vec<String>,
    },
    /// The server exited and no restart is left: its tools fail from now on.
    #[error(
        "MCP server '{server}' exited and is not started again (restarted {restarts} time(s), as many as allowed): its tools are unavailable"
    )]
    Unavailable {
        /// The server's configured name.
        server: String,
        /// How many times it was restarted.
        restarts: u32,
    },
    /// The configuration is unusable (bad header, bad URL).
    #[error("MCP server '{server}' configuration: {message}")]
    Config {
        /// The server's configured name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The server asked the user something (elicitation) that has no
    /// answer yet: the call stops, to be made again with the answer.
    #[error("MCP server '{server}' asks the user: {question}")]
    InputNeeded {
        /// The server's configured name.
        server: String,
        /// The question, as the user is asked it.
        question: String,
    },
    /// The call was cancelled (the turn was); the server was told.
    #[error("the call of '{tool}' on MCP server '{server}' was cancelled")]
    Cancelled {
        /// The server's configured name.
        server: String,
        /// The tool.
        tool: String,
    },
}

/// `a`, `b` and `c` as `` `a`, `b`, `c` `` (or "none").
fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A [`ChatAgent`](crate::ChatAgent) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatAgentBuildError {
    /// No model was given.
    #[error("chat agent '{0}' has no model")]
    MissingModel(String),
    /// A name the model would see is not a valid tool name.
    #[error(
        "chat agent '{agent}': '{name}' is not a valid tool name (1 to 64 letters, digits, '_' or '-')"
    )]
    InvalidToolName {
        /// The agent.
        agent: String,
        /// The offending name.
        name: String,
    },
    /// Two tools (or a tool and a handoff) share a name.
    #[error("chat agent '{agent}' has two tools named '{name}'")]
    DuplicateTool {
        /// The agent.
        agent: String,
        /// The name.
        name: String,
    },
    /// An agent may not hand off to itself.
    #[error("chat agent '{0}' lists itself as a handoff target")]
    HandoffToSelf(String),
    /// The structured-output schema cannot be used.
    #[error("chat agent '{agent}': structured output schema: {source}")]
    InvalidSchema {
        /// The agent.
        agent: String,
        /// What is wrong with it.
        source: SchemaError,
    },
}

/// A user proxy's turn no longer waits for the answer given to
/// [`UserRequest::respond`](crate::UserRequest::respond) (it was cancelled,
/// timed out, or its run ended); the answer comes back with the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nobody waits for this answer any more")]
pub struct NotWaiting {
    answer: String,
}

impl NotWaiting {
    pub(crate) fn new(answer: String) -> Self {
        NotWaiting { answer }
    }

    /// The answer that was not taken.
    pub fn answer(&self) -> &str {
        &self.answer
    }

    /// The answer back, to give elsewhere.
    pub fn into_answer(self) -> String {
        self.answer
    }
}
