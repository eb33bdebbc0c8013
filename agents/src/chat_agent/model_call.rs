//! One model call of a turn: streamed — each piece of the answer an event
//! as it arrives — or whole; its attempts, retries and end as events; its
//! usage estimated (and said to be) when the server gave none.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use troupe_runtime::{AgentError, Event, RunContext, Usage};

use super::ChatAgent;
use crate::context_policy::estimate_tokens;
use crate::error::ModelError;
use crate::model::{
    CallObserver, ChatDelta, ChatMessage, ChatRequest, ChatResponse, StreamAccumulator,
};

impl ChatAgent {
    /// Asks the model, streaming when the agent says so or, unset, when
    /// somebody listens to `ctx`'s events.
    pub(super) async fn call_model(
        &self,
        request: &ChatRequest,
        ctx: &RunContext,
    ) -> Result<ChatResponse, AgentError> {
        let streaming = self.streaming.unwrap_or_else(|| ctx.events_enabled());
        let events = CallEvents::new(ctx, self.model.model_name());
        let outcome = if streaming {
            Box::pin(read_stream(self, request, ctx, &events)).await
        } else {
            self.model.complete_observed(request, &events).await
        };
        match outcome {
            Ok(mut response) => {
                let estimated = response.usage.is_none();
                if estimated {
                    response.usage = Some(estimate_usage(request, &response));
                }
                let cost = response.usage.and_then(|u| self.call_cost(u));
                events.finished(response.usage, estimated, cost, None);
                Ok(response)
            }
            Err(e) => {
                events.finished(None, false, None, Some(e.to_string()));
                Err(e.into())
            }
        }
    }
}

/// Reads the model's stream to its end, each text or tool-call piece an
/// event as it arrives, into the same response a whole call gives.
async fn read_stream(
    agent: &ChatAgent,
    request: &ChatRequest,
    ctx: &RunContext,
    events: &CallEvents<'_>,
) -> Result<ChatResponse, ModelError> {
    let mut stream = agent.model.stream_observed(request, events).await?;
    let mut acc = StreamAccumulator::new();
    let listening = ctx.events_enabled();
    while let Some(delta) = stream.next().await {
        let delta = delta?;
        if !listening {
            acc.push(delta);
            continue;
        }
        match delta {
            ChatDelta::Text(text) => {
                if !text.is_empty() {
                    ctx.emit(Event::TextDelta {
                        path: ctx.path().clone(),
                        text: text.clone(),
                    });
                }
                acc.push(ChatDelta::Text(text));
            }
            ChatDelta::ToolCall(piece) => {
                let shown =
                    (!piece.arguments.is_empty() || piece.id.is_some() || piece.name.is_some())
                        .then(|| {
                            (
                                piece.id.clone(),
                                piece.name.clone(),
                                piece.arguments.clone(),
                            )
                        });
                acc.push(ChatDelta::ToolCall(piece));
                if let (Some((call_id, name, arguments)), Some(index)) =
                    (shown, acc.last_call_index())
                {
                    ctx.emit(Event::ToolArgumentsDelta {
                        path: ctx.path().clone(),
                        index,
                        call_id,
                        name,
                        arguments,
                    });
                }
            }
            other => acc.push(other),
        }
    }
    Ok(acc.finish())
}

/// Tokens of a call, roughly, when the server did not say: the request's
/// messages and tools in, the answer out.
fn estimate_usage(request: &ChatRequest, response: &ChatResponse) -> Usage {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| (t.name.len() + t.description.len() + t.parameters.to_string().len()).div_ceil(4))
        .sum();
    let prompt: usize = request.messages.iter().map(estimate_tokens).sum::<usize>() + tools;
    let answer = ChatMessage::Assistant {
        content: response.content.clone(),
        tool_calls: response.tool_calls.clone(),
    };
    Usage {
        prompt_tokens: prompt as u64,
        completion_tokens: estimate_tokens(&answer) as u64,
    }
}

/// Turns what a call reports into events at the agent's path: an attempt
/// starts, an attempt failed and is retried, the call ended.
struct CallEvents<'a> {
    ctx: &'a RunContext,
    model: &'a str,
    /// The attempt under way and when it started.
    attempt: Mutex<(u32, Instant)>,
}

impl<'a> CallEvents<'a> {
    fn new(ctx: &'a RunContext, model: &'a str) -> Self {
        CallEvents {
            ctx,
            model,
            attempt: Mutex::new((1, Instant::now())),
        }
    }

    fn current(&self) -> (u32, Instant) {
        *self.attempt.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finished(
        &self,
        usage: Option<Usage>,
        usage_estimated: bool,
        cost: Option<f64>,
        error: Option<String>,
    ) {
        let (attempt, started) = self.current();
        self.ctx.emit_with(|| Event::ModelCallFinished {
            path: self.ctx.path().clone(),
            model: self.model.to_string(),
            attempt,
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            usage,
            usage_estimated,
            cost,
            error,
        });
    }
}

impl CallObserver for CallEvents<'_> {
    fn attempt_started(&self, attempt: u32) {
        *self.attempt.lock().unwrap_or_else(|p| p.into_inner()) = (attempt, Instant::now());
        self.ctx.emit_with(|| Event::ModelCallStarted {
            path: self.ctx.path().clone(),
            model: self.model.to_string(),
            attempt,
        });
    }

    fn retrying(&self, attempt: u32, delay: Duration, error: &ModelError) {
        self.ctx.emit_with(|| Event::ModelCallRetry {
            path: self.ctx.path().clone(),
            model: self.model.to_string(),
            attempt,
            error: error.to_string(),
            delay_ms: delay.as_secs_f64() * 1000.0,
        });
    }

    fn waiting_for_capacity(&self, waited: Duration) {
        self.ctx.emit_with(|| Event::ModelCallThrottled {
            path: self.ctx.path().clone(),
            model: self.model.to_string(),
            waited_ms: waited.as_secs_f64() * 1000.0,
        });
    }
}
