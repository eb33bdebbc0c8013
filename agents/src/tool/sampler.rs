//! [`Sampler`]: the calling agent's own model, lent to a tool that asks
//! for a completion of its own (an MCP server's sampling request), and
//! metered like any model call of the agent's turn.

use std::fmt;
use std::sync::Arc;

use troupe_runtime::RunContext;

use crate::error::ModelError;
use crate::metered::{CallEvents, estimate_usage};
use crate::model::{ChatModel, ChatRequest, ChatResponse, Pricing};

/// The calling agent's model, as a tool may use it.
#[derive(Clone)]
pub struct Sampler {
    model: Arc<dyn ChatModel>,
    pricing: Option<Pricing>,
}

impl fmt::Debug for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampler")
            .field("model", &self.model.model_name())
            .finish()
    }
}

impl Sampler {
    /// The agent's `model`, priced at `pricing` (the model's own prices
    /// when `None`).
    pub fn new(model: Arc<dyn ChatModel>, pricing: Option<Pricing>) -> Self {
        Sampler { model, pricing }
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        self.model.model_name()
    }

    /// Asks the model, as the agent would: its start and end are events
    /// of `ctx`, and its usage (estimated when the provider gave none) and
    /// cost count in the turn's meter, so in the run's usage and budgets.
    pub async fn complete(
        &self,
        request: &ChatRequest,
        ctx: &RunContext,
    ) -> Result<ChatResponse, ModelError> {
        let pricing = self.pricing.or_else(|| self.model.pricing());
        let events = CallEvents::new(ctx, self.model.model_name(), pricing);
        match self.model.complete_observed(request, &events).await {
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
}
