//! One model call of a turn: streamed — each piece of the answer an event
//! as it arrives — or whole; its attempts, retries and end as events; its
//! usage estimated (and said to be) when the server gave none.

use futures::StreamExt;
use troupe_runtime::{AgentError, Event, RunContext};

use super::ChatAgent;
use crate::error::ModelError;
use crate::metered::{CallEvents, estimate_usage};
use crate::model::{ChatDelta, ChatRequest, ChatResponse, StreamAccumulator};

impl ChatAgent {
    /// Asks the model, streaming when the agent says so or, unset, when
    /// somebody listens to `ctx`'s events; records the call (its usage,
    /// and its cost at the prices of the model that answered) in the
    /// turn's meter, so it counts even if the turn then fails.
    pub(super) async fn call_model(
        &self,
        request: &ChatRequest,
        ctx: &RunContext,
    ) -> Result<ChatResponse, AgentError> {
        let streaming = self.streaming.unwrap_or_else(|| ctx.events_enabled());
        let pricing = self.pricing.or_else(|| self.model.pricing());
        let events = CallEvents::new(ctx, self.model.model_name(), pricing);
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
                let usage = response.usage.unwrap_or_default();
                let cost = events.cost(usage);
                events.finished(response.usage, estimated, cost, None);
                ctx.record_model_call(usage, cost);
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
