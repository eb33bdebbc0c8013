//! [`PricedModel`]: a model with its prices, so that whoever calls it
//! (an agent, a team's manager, a selector, a planner) can say what each
//! call cost.

use std::sync::Arc;

use async_trait::async_trait;

use super::{CallObserver, ChatModel, ChatRequest, ChatResponse, ChatStream, Pricing};
use crate::error::ModelError;

/// A model that answers as `inner` does and is priced at `pricing`
/// ([`ChatModel::pricing`]).
///
/// ```
/// use std::sync::Arc;
/// use troupe_agents::model::{ChatModel, PricedModel, Pricing, ScriptedModel, ScriptedReply};
///
/// let model = PricedModel::new(
///     Arc::new(ScriptedModel::new([ScriptedReply::text("hi")])),
///     Pricing::per_million(1.0, 2.0),
/// );
/// assert_eq!(model.pricing(), Some(Pricing::per_million(1.0, 2.0)));
/// ```
pub struct PricedModel {
    inner: Arc<dyn ChatModel>,
    pricing: Pricing,
}

impl std::fmt::Debug for PricedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PricedModel")
            .field("model", &self.inner.model_name())
            .field("pricing", &self.pricing)
            .finish()
    }
}

impl PricedModel {
    /// `inner`, priced at `pricing`.
    pub fn new(inner: Arc<dyn ChatModel>, pricing: Pricing) -> Self {
        PricedModel { inner, pricing }
    }
}

#[async_trait]
impl ChatModel for PricedModel {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }
    fn context_window(&self) -> Option<usize> {
        self.inner.context_window()
    }
    fn pricing(&self) -> Option<Pricing> {
        Some(self.pricing)
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.inner.complete(request).await
    }
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        self.inner.stream(request).await
    }
    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        self.inner.complete_observed(request, observer).await
    }
    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        self.inner.stream_observed(request, observer).await
    }
}
