//! A model call metered as a turn's: its attempts, retries, waits and
//! failovers as events naming the model that made each, its end with the
//! usage and the price of the model that answered, and the call recorded
//! in the turn's meter so budgets count it — whoever makes the call (a
//! [`ChatAgent`](crate::ChatAgent), a team's manager or selector, a
//! planner).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use troupe_runtime::{Event, RunContext, message::Usage};

use crate::context_policy::estimate_tokens;
use crate::error::ModelError;
use crate::model::{CallObserver, ChatMessage, ChatModel, ChatRequest, ChatResponse, Pricing};

/// Asks `model` to answer `request` whole, as a call of `ctx`'s turn:
/// `model_call_started`/`model_call_finished` (and retry, throttle,
/// failover) events at `ctx`'s path, and the call's usage and cost
/// (estimated when the server gave none; priced by the model that
/// answered, [`ChatModel::pricing`]) recorded
/// with [`RunContext::record_model_call`] when it answers.
///
/// # Errors
///
/// The model's, when it fails.
pub async fn complete_metered(
    model: &dyn ChatModel,
    request: &ChatRequest,
    ctx: &RunContext,
) -> Result<ChatResponse, ModelError> {
    let events = CallEvents::new(ctx, model.model_name(), model.pricing());
    match model.complete_observed(request, &events).await {
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
            Err(e)
        }
    }
}

/// Tokens of a call, roughly, when the server did not say: the request's
/// messages and tools in, the answer out.
pub(crate) fn estimate_usage(request: &ChatRequest, response: &ChatResponse) -> Usage {
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

/// The model answering a call and its prices: the one asked, until a
/// fallback hands the call to another.
struct Answering {
    model: String,
    pricing: Option<Pricing>,
}

/// Turns what a call reports into events at the caller's path: an
/// attempt starts, an attempt failed and is retried, the call waited for
/// its rate limit, another model took over, the call ended.
pub(crate) struct CallEvents<'a> {
    ctx: &'a RunContext,
    answering: Mutex<Answering>,
    /// The attempt under way and when it started.
    attempt: Mutex<(u32, Instant)>,
}

impl<'a> CallEvents<'a> {
    /// Events of a call to `model`, priced at `pricing`.
    pub(crate) fn new(ctx: &'a RunContext, model: &str, pricing: Option<Pricing>) -> Self {
        CallEvents {
            ctx,
            answering: Mutex::new(Answering {
                model: model.to_string(),
                pricing,
            }),
            attempt: Mutex::new((1, Instant::now())),
        }
    }

    fn current(&self) -> (u32, Instant) {
        *self.attempt.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn model(&self) -> String {
        self.answering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .model
            .clone()
    }

    /// What a call that used `usage` cost at the prices of the model
    /// answering it, if that one is priced.
    pub(crate) fn cost(&self, usage: Usage) -> Option<f64> {
        self.answering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pricing
            .map(|p| p.cost(usage))
    }

    /// The call ended: `model_call_finished`, naming the model that
    /// answered (or failed last).
    pub(crate) fn finished(
        &self,
        usage: Option<Usage>,
        usage_estimated: bool,
        cost: Option<f64>,
        error: Option<String>,
    ) {
        let (attempt, started) = self.current();
        self.ctx.emit_with(|| Event::ModelCallFinished {
            path: self.ctx.path().clone(),
            model: self.model(),
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
    fn path(&self) -> Option<&str> {
        Some(self.ctx.path())
    }

    fn run_id(&self) -> Option<&str> {
        self.ctx.run_id().map(|r| &**r)
    }

    fn attempt_started(&self, attempt: u32) {
        *self.attempt.lock().unwrap_or_else(|p| p.into_inner()) = (attempt, Instant::now());
        self.ctx.emit_with(|| Event::ModelCallStarted {
            path: self.ctx.path().clone(),
            model: self.model(),
            attempt,
        });
    }

    fn retrying(&self, attempt: u32, delay: Duration, error: &ModelError) {
        self.ctx.emit_with(|| Event::ModelCallRetry {
            path: self.ctx.path().clone(),
            model: self.model(),
            attempt,
            error: error.to_string(),
            delay_ms: delay.as_secs_f64() * 1000.0,
        });
    }

    fn asking(&self, model: &dyn ChatModel) {
        let mut answering = self.answering.lock().unwrap_or_else(|p| p.into_inner());
        // The first model asked keeps the agent's own prices, if it
        // has some and the model none.
        if answering.model != model.model_name() || model.pricing().is_some() {
            answering.model = model.model_name().to_string();
            answering.pricing = model.pricing();
        }
    }

    fn failover(&self, failed: &str, error: &ModelError, next: &dyn ChatModel) {
        self.ctx.emit_with(|| Event::ModelFailover {
            path: self.ctx.path().clone(),
            model: failed.to_string(),
            error: error.to_string(),
            next: next.model_name().to_string(),
        });
    }

    fn waiting_for_capacity(&self, waited: Duration) {
        self.ctx.emit_with(|| Event::ModelCallThrottled {
            path: self.ctx.path().clone(),
            model: self.model(),
            waited_ms: waited.as_secs_f64() * 1000.0,
        });
    }
}
