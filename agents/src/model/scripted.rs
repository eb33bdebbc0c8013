//! [`ScriptedModel`]: a deterministic model for examples and tests, offline.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Serialize;
use troupe_runtime::{ToolCall, Usage};

use super::{ChatModel, ChatRequest, ChatResponse, FinishReason};
use crate::error::ModelError;
use crate::tool::handoff_tool_name;

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

fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

type ReplyFn = dyn Fn(&ChatRequest) -> Result<ScriptedReply, ModelError> + Send + Sync;

enum Source {
    List {
        replies: VecDeque<ScriptedReply>,
        total: usize,
    },
    Function(Box<ReplyFn>),
}

struct State {
    source: Source,
    requests: Vec<ChatRequest>,
}

/// A model that answers from a script: a list of replies used in order, or
/// a function of the request. It records every request, so tests can check
/// what the model was shown.
///
/// Tool-call ids are `call_<n>_<i>` (call number, position); usage is
/// estimated at four characters a token, so token budgets can be tested.
/// A list that runs out fails the call with
/// [`ModelError::ScriptExhausted`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, ScriptedModel, ScriptedReply};
///
/// let model = ScriptedModel::new([
///     ScriptedReply::tool_call("add", serde_json::json!({"a": 1, "b": 2})),
///     ScriptedReply::text("3"),
/// ]);
/// let ask = ChatRequest::new(vec![ChatMessage::user("1+2?")]);
/// assert_eq!(model.complete(&ask).await.unwrap().tool_calls[0].name, "add");
/// assert_eq!(model.complete(&ask).await.unwrap().text_content(), "3");
/// assert!(model.complete(&ask).await.is_err()); // exhausted
/// assert_eq!(model.requests().len(), 3);
/// # }
/// ```
pub struct ScriptedModel {
    name: String,
    state: Mutex<State>,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl ScriptedModel {
    /// A model answering with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        let replies: VecDeque<_> = replies.into_iter().collect();
        let total = replies.len();
        Self::with_source(Source::List { replies, total })
    }

    /// A model answering with whatever `reply` makes of each request.
    pub fn from_fn(
        reply: impl Fn(&ChatRequest) -> Result<ScriptedReply, ModelError> + Send + Sync + 'static,
    ) -> Self {
        Self::with_source(Source::Function(Box::new(reply)))
    }

    fn with_source(source: Source) -> Self {
        ScriptedModel {
            name: "scripted".to_string(),
            state: Mutex::new(State {
                source,
                requests: Vec::new(),
            }),
        }
    }

    /// Renames the model (the name shows in errors and events).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// Replies left in a list script (`None` for a function script).
    pub fn remaining(&self) -> Option<usize> {
        match &self.lock().source {
            Source::List { replies, .. } => Some(replies.len()),
            Source::Function(_) => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent even if a scripted function panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn next_reply(&self, request: &ChatRequest) -> Result<(usize, ScriptedReply), ModelError> {
        let mut state = self.lock();
        state.requests.push(request.clone());
        let call = state.requests.len();
        let reply = match &mut state.source {
            Source::List { replies, total } => {
                replies
                    .pop_front()
                    .ok_or_else(|| ModelError::ScriptExhausted {
                        model: self.name.clone(),
                        replies: *total,
                        call,
                    })?
            }
            Source::Function(f) => f(request)?,
        };
        Ok((call, reply))
    }
}

/// About four characters a token: rough, but deterministic.
fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let (call, reply) = self.next_reply(request)?;
        let calls = |list: Vec<(String, String)>| -> Vec<ToolCall> {
            list.into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolCall {
                    id: format!("call_{call}_{i}"),
                    name,
                    arguments,
                })
                .collect()
        };
        let mut response = match reply {
            ScriptedReply::Text(text) => ChatResponse::text(text),
            ScriptedReply::ToolCalls(list) => ChatResponse {
                content: None,
                tool_calls: calls(list),
                finish_reason: FinishReason::ToolCalls,
                usage: None,
                model: None,
            },
            ScriptedReply::Handoff { target, reason } => ChatResponse {
                content: None,
                tool_calls: calls(vec![(
                    handoff_tool_name(&target),
                    json_text(&serde_json::json!({ "reason": reason })),
                )]),
                finish_reason: FinishReason::ToolCalls,
                usage: None,
                model: None,
            },
            ScriptedReply::Response(r) => r,
            ScriptedReply::Error(e) => return Err(e),
        };
        if response.usage.is_none() {
            let prompt: u64 = request
                .messages
                .iter()
                .map(|m| estimate_tokens(m.text()) + 4)
                .sum();
            let completion = estimate_tokens(response.text_content())
                + response
                    .tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
                    .sum::<u64>();
            response.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion.max(1),
            });
        }
        response.model.get_or_insert_with(|| self.name.clone());
        Ok(response)
    }
}
