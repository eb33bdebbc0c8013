//! [`FallbackModel`]: a model that, when its first choice fails for good,
//! asks the next one, and rests a model that keeps failing.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{CallObserver, ChatModel, ChatRequest, ChatResponse, ChatStream, NoObserver};
use crate::error::ModelError;
use crate::model::retry::RetryOn;

/// How long a failed model is skipped by default.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// Which models of a fallback chain are cooling down, and until when
/// (by their place in the chain). Chains of the same models may share one
/// ([`FallbackModel::with_cooldowns`]), so that a model one agent found
/// failing is skipped by the others too.
#[derive(Debug, Default)]
pub struct Cooldowns {
    until: Mutex<HashMap<usize, Instant>>,
}

impl Cooldowns {
    /// No model cooling down.
    pub fn new() -> Arc<Self> {
        Arc::new(Cooldowns::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Instant>> {
        self.until.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A chain of models: the first answers unless it fails for good (after
/// its own retries) on a failure that may pass — a rate limit, a server
/// error, a timeout, a lost connection — and then the next is asked, and
/// so on. A model that failed so is skipped for the `cooldown` (60 s by
/// default) on later calls; when every model is cooling down, they are all
/// tried again in order. Any other failure (a bad request, a bad key) is
/// returned as it is: another model would not fix it.
///
/// It forwards [`complete_observed`](ChatModel::complete_observed) and
/// [`stream_observed`](ChatModel::stream_observed), so attempts, retries
/// and waits of each model are still reported. When every model failed,
/// the error ([`ModelError::FallbackExhausted`]) names each one and how it
/// failed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use troupe_agents::model::{ChatModel, ChatRequest, ChatMessage, FallbackModel};
/// use troupe_agents::{ModelError, ScriptedModel, ScriptedReply};
///
/// let down = ScriptedModel::new([ScriptedReply::Error(ModelError::Status {
///     endpoint: "http://primary/v1".into(),
///     status: 503,
///     body: "overloaded".into(),
///     retry_after: None,
/// })])
/// .named("primary");
/// let up = ScriptedModel::new([ScriptedReply::text("hello")]).named("backup");
/// let model = FallbackModel::new([Arc::new(down) as Arc<dyn ChatModel>, Arc::new(up)]);
/// let answer = model.complete(&ChatRequest::new(vec![ChatMessage::user("hi")])).await;
/// assert_eq!(answer.unwrap().text_content(), "hello");
/// # }
/// ```
pub struct FallbackModel {
    name: String,
    models: Vec<Arc<dyn ChatModel>>,
    cooldown: Duration,
    /// Until when each model is skipped.
    resting: Arc<Cooldowns>,
}

impl fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackModel")
            .field(
                "models",
                &self
                    .models
                    .iter()
                    .map(|m| m.model_name())
                    .collect::<Vec<_>>(),
            )
            .field("cooldown", &self.cooldown)
            .finish()
    }
}

impl FallbackModel {
    /// A chain of `models`, the first preferred. Its name is the first's.
    pub fn new(models: impl IntoIterator<Item = Arc<dyn ChatModel>>) -> Self {
        let models: Vec<Arc<dyn ChatModel>> = models.into_iter().collect();
        FallbackModel {
            name: models
                .first()
                .map_or_else(String::new, |m| m.model_name().to_string()),
            resting: Cooldowns::new(),
            models,
            cooldown: DEFAULT_COOLDOWN,
        }
    }

    /// Sets how long a model that failed for good is skipped.
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Shares `cooldowns` with other chains of the same models (in the
    /// same order): a model resting in one rests in all.
    pub fn with_cooldowns(mut self, cooldowns: Arc<Cooldowns>) -> Self {
        self.resting = cooldowns;
        self
    }

    /// The models in the order they are asked, those cooling down last
    /// (and asked only when every model is).
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let resting = self.resting.lock();
        let ready: Vec<usize> = (0..self.models.len())
            .filter(|i| resting.get(i).is_none_or(|t| *t <= now))
            .collect();
        if ready.is_empty() {
            (0..self.models.len()).collect()
        } else {
            ready
        }
    }

    fn rest(&self, index: usize, failed: bool) {
        let mut resting = self.resting.lock();
        if failed {
            resting.insert(index, Instant::now() + self.cooldown);
        } else {
            resting.remove(&index);
        }
    }

    /// Asks each model in turn with `call` until one answers or fails with
    /// an error no other model would fix, telling `observer` of each
    /// model that takes over from a failed one.
    async fn first_answer<'a, T, F, Fut>(
        &'a self,
        observer: &dyn CallObserver,
        mut call: F,
    ) -> Result<T, ModelError>
    where
        F: FnMut(&'a Arc<dyn ChatModel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ModelError>>,
    {
        let mut tried = Vec::new();
        let mut last = None;
        let order = self.order();
        for (place, &index) in order.iter().enumerate() {
            let Some(model) = self.models.get(index) else {
                continue;
            };
            observer.asking(model.as_ref());
            match call(model).await {
                Ok(answer) => {
                    self.rest(index, false);
                    return Ok(answer);
                }
                Err(e) if RetryOn::of(&e).is_some() => {
                    tracing::warn!(model = model.model_name(), error = %e, "model failed; trying the next one");
                    self.rest(index, true);
                    let next = order.get(place + 1).and_then(|&i| self.models.get(i));
                    if let Some(next) = next {
                        observer.failover(model.model_name(), &e, next.as_ref());
                    }
                    tried.push(format!("{}: {e}", model.model_name()));
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(match last {
            Some(last) => ModelError::FallbackExhausted {
                tried,
                last: Box::new(last),
            },
            None => ModelError::Config("a fallback chain holds no model".into()),
        })
    }
}

#[async_trait]
impl ChatModel for FallbackModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    /// The smallest window of the chain: whichever model answers, the
    /// request fits.
    fn context_window(&self) -> Option<usize> {
        self.models.iter().filter_map(|m| m.context_window()).min()
    }

    /// The first model's: the one that answers unless it fails (an
    /// observed call learns of another taking over,
    /// [`CallObserver::failover`]).
    fn pricing(&self) -> Option<super::Pricing> {
        self.models.first().and_then(|m| m.pricing())
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.complete_observed(request, &NoObserver).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        self.stream_observed(request, &NoObserver).await
    }

    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        self.first_answer(observer, |m| m.complete_observed(request, observer))
            .await
    }

    /// Falls back while opening the stream; a stream that breaks off
    /// midway ends with its error.
    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        self.first_answer(observer, |m| m.stream_observed(request, observer))
            .await
    }
}
