//! [`A2aError`]: what calling a remote A2A agent can fail with.

use troupe_runtime::AgentError;

use super::types::TaskState;
use crate::error::ModelError;

/// Calling a remote A2A agent failed.
///
/// Every variant names the agent's URL; none carries a header value (the
/// server's words quoted in errors are redacted).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The agent could not be reached, or did not answer in time, after
    /// every attempt the retry policy allows.
    #[error("the A2A agent at {url} is unreachable: {source}")]
    Unreachable {
        /// The agent's URL.
        url: String,
        /// The transport's failure (connection, timeout, HTTP status).
        #[source]
        source: ModelError,
    },
    /// The agent answered with an HTTP error status (after every attempt
    /// the retry policy allows, when the status is one it retries).
    #[error("the A2A agent at {url} refused the call: {source}")]
    Http {
        /// The agent's URL.
        url: String,
        /// The status and the start of the body.
        #[source]
        source: ModelError,
    },
    /// The agent card is not JSON, not a card, or names no JSON-RPC
    /// endpoint.
    #[error("the agent card at {url} is malformed: {message}")]
    MalformedCard {
        /// Where the card was read.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The remote task ended failed, rejected or cancelled.
    #[error("the remote task {task} of the A2A agent at {url} ended {}: {message}", state_name(*.state))]
    TaskFailed {
        /// The agent's URL.
        url: String,
        /// The remote task's id.
        task: String,
        /// The state it ended in.
        state: TaskState,
        /// What the agent said about it.
        message: String,
    },
    /// The agent answered a request with a JSON-RPC error.
    #[error("the A2A agent at {url} refused {method} (error {code}): {message}")]
    Rpc {
        /// The agent's endpoint.
        url: String,
        /// The method called.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The agent's message.
        message: String,
    },
    /// The agent's answer is not what the protocol says it is.
    #[error("cannot read the answer of the A2A agent at {url} to {method}: {message}")]
    Protocol {
        /// The agent's endpoint.
        url: String,
        /// The method called.
        method: String,
        /// What is wrong with the answer.
        message: String,
    },
    /// The client is misconfigured (a bad URL or header).
    #[error("A2A client configuration: {0}")]
    Config(String),
}

fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Failed => "failed",
        TaskState::Rejected => "rejected",
        TaskState::Canceled => "cancelled",
        TaskState::AuthRequired => "asking for authentication (not supported)",
        _ => "without an answer",
    }
}

/// An unreachable agent is a failure that may pass
/// ([`ErrorKind::Transient`](troupe_runtime::ErrorKind::Transient), which a workflow's retry policy may try
/// again); anything else is [`ErrorKind::Failed`](troupe_runtime::ErrorKind::Failed). The `A2aError` is kept
/// as the source.
impl From<A2aError> for AgentError {
    fn from(e: A2aError) -> Self {
        let error = match &e {
            A2aError::Unreachable { .. } => AgentError::transient(e.to_string()),
            _ => AgentError::failed(e.to_string()),
        };
        error.with_source(e)
    }
}
