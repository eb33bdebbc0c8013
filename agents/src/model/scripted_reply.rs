//! [`ScriptedReply`]: one answer of a [`ScriptedModel`](super::ScriptedModel)'s
//! script, and how a script replays one.

use serde::Serialize;

use super::ChatResponse;
use crate::error::ModelError;

/// One scripted answer.
#[derive(Debug)]
pub enum ScriptedReply {
    /// A text answer.
    Text(String),
    /// Tool calls `(name, arguments as JSON text)`.
    ToolCalls(Vec<(String, String)>),
    /// A call of the `transfer_to_<target>` handoff tool.
    Handoff {
        /// The agent to hand off to.
        target: String,
        /// Why.
        reason: String,
    },
    /// A whole response, as given.
    Response(ChatResponse),
    /// A failed call.
    Error(ModelError),
}

impl ScriptedReply {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply::Text(text.into())
    }

    /// One tool call with these arguments.
    pub fn tool_call(name: impl Into<String>, arguments: impl Serialize) -> Self {
        ScriptedReply::ToolCalls(vec![(name.into(), json_text(&arguments))])
    }

    /// Several tool calls in one answer (a ChatAgent runs them concurrently).
    pub fn tool_calls<N: Into<String>, A: Serialize>(
        calls: impl IntoIterator<Item = (N, A)>,
    ) -> Self {
        ScriptedReply::ToolCalls(
            calls
                .into_iter()
                .map(|(n, a)| (n.into(), json_text(&a)))
                .collect(),
        )
    }

    /// Tool calls whose arguments are given as raw text (even invalid JSON,
    /// to test how tools cope).
    pub fn raw_tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ScriptedReply::ToolCalls(vec![(name.into(), arguments.into())])
    }

    /// A handoff to `target`.
    pub fn handoff(target: impl Into<String>, reason: impl Into<String>) -> Self {
        ScriptedReply::Handoff {
            target: target.into(),
            reason: reason.into(),
        }
    }

    /// Structured output: the value as JSON text.
    pub fn structured(value: impl Serialize) -> Self {
        ScriptedReply::Text(json_text(&value))
    }

    /// A failed call with this message.
    pub fn error(message: impl Into<String>) -> Self {
        ScriptedReply::Error(ModelError::Other(message.into()))
    }
}

pub(super) fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// The same reply again, for a script that repeats or cycles. A
/// [`ModelError`] is not `Clone`: the errors a script simulates keep their
/// kind (so a retry policy judges a repeated failure as it judged the
/// first), and the others repeat as their message.
pub(super) fn replay(reply: &ScriptedReply) -> ScriptedReply {
    match reply {
        ScriptedReply::Text(text) => ScriptedReply::Text(text.clone()),
        ScriptedReply::ToolCalls(calls) => ScriptedReply::ToolCalls(calls.clone()),
        ScriptedReply::Handoff { target, reason } => ScriptedReply::Handoff {
            target: target.clone(),
            reason: reason.clone(),
        },
        ScriptedReply::Response(response) => ScriptedReply::Response(response.clone()),
        ScriptedReply::Error(error) => ScriptedReply::Error(match error {
            ModelError::Status {
                endpoint,
                status,
                body,
                retry_after,
            } => ModelError::Status {
                endpoint: endpoint.clone(),
                status: *status,
                body: body.clone(),
                retry_after: *retry_after,
            },
            ModelError::Connect { endpoint, message } => ModelError::Connect {
                endpoint: endpoint.clone(),
                message: message.clone(),
            },
            ModelError::Timeout { endpoint, after } => ModelError::Timeout {
                endpoint: endpoint.clone(),
                after: *after,
            },
            ModelError::Config(message) => ModelError::Config(message.clone()),
            other => ModelError::Other(other.to_string()),
        }),
    }
}
