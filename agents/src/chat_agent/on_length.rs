//! What a [`ChatAgent`] does with an answer cut off at the token limit
//! (`finish_reason: length`): fail with an error that says so (the
//! default), or ask the model to go on and join the parts.

use troupe_runtime::{AgentError, RunContext, message::Usage};

use super::ChatAgent;
use crate::error::ModelError;
use crate::model::{ChatMessage, ChatRequest, ChatResponse, FinishReason};

/// The turn asking the model to go on after a cut-off answer.
pub const CONTINUE_PROMPT: &str =
    "Your answer was cut off. Continue exactly where it stopped, without repeating anything.";

/// What to do with an answer cut off at the token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnLength {
    /// Fail the turn with [`ModelError::Truncated`], naming the model and
    /// the cap (the default: a cut-off answer is rarely what was wanted).
    #[default]
    Error,
    /// Send the partial answer back as the model's turn with a user turn
    /// asking it to go on ([`CONTINUE_PROMPT`]), and join the parts, at
    /// most `rounds` times; still cut off after that, the turn fails.
    Continue {
        /// Continuations asked for at most.
        rounds: u32,
    },
}

impl OnLength {
    /// Continue, up to three rounds.
    pub fn continue_up_to_3() -> Self {
        OnLength::Continue { rounds: 3 }
    }
}

impl ChatAgent {
    /// Asks the model (see `call_model`), handling a cut-off answer as
    /// the agent's [`OnLength`] says.
    pub(super) async fn answer(
        &self,
        request: &ChatRequest,
        ctx: &RunContext,
    ) -> Result<ChatResponse, AgentError> {
        // Each call counts, even when its answer is then refused as cut off.
        let response = self.call_model(request, ctx).await?;
        if response.finish_reason != FinishReason::Length {
            return Ok(response);
        }
        // Boxed: the continuation's requests and parts would otherwise sit
        // in every turn's future, which is built and moved whole each turn.
        Box::pin(self.go_on(request, ctx, response)).await
    }

    /// Handles `response`, an answer to `request` cut off at the token
    /// limit, as the agent's [`OnLength`] says.
    async fn go_on(
        &self,
        request: &ChatRequest,
        ctx: &RunContext,
        mut response: ChatResponse,
    ) -> Result<ChatResponse, AgentError> {
        let rounds = match self.on_length {
            OnLength::Continue { rounds } if response.tool_calls.is_empty() => rounds,
            _ => return Err(self.truncated(request)),
        };
        let mut asked = request.clone();
        let mut part = response.content.take().unwrap_or_default();
        let mut text = part.clone();
        let mut usage = response.usage;
        for _ in 0..rounds {
            asked
                .messages
                .push(ChatMessage::assistant(std::mem::take(&mut part)));
            asked.messages.push(ChatMessage::user(CONTINUE_PROMPT));
            response = self.call_model(&asked, ctx).await?;
            part = response.content.take().unwrap_or_default();
            text.push_str(&part);
            usage = add(usage, response.usage);
            if !response.tool_calls.is_empty() {
                return Err(self.truncated(request));
            }
            if response.finish_reason != FinishReason::Length {
                response.content = Some(text);
                response.usage = usage;
                return Ok(response);
            }
        }
        Err(self.truncated(request))
    }

    fn truncated(&self, request: &ChatRequest) -> AgentError {
        ModelError::Truncated {
            model: self.model.model_name().to_string(),
            max_tokens: request.max_tokens,
        }
        .into()
    }
}

fn add(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Usage {
            prompt_tokens: a.prompt_tokens + b.prompt_tokens,
            completion_tokens: a.completion_tokens + b.completion_tokens,
        }),
        (a, b) => a.or(b),
    }
}
