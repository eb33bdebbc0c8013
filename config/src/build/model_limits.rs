//! A model's `retry:`, `rate_limit:` and `fallback:` as the agents crate
//! takes them.

use std::sync::Arc;
use std::time::Duration;

use troupe_agents::ChatModel;
use troupe_agents::model::{FallbackModel, ModelRetryPolicy, RateLimit, RetryOn, ScriptPosition};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::schema::{ModelRetrySpec, ModelSpec, RetryKindSpec};

/// The policy a `retry:` section describes (a model's, an A2A agent's).
pub(super) fn retry_policy_of(r: &ModelRetrySpec) -> ModelRetryPolicy {
    let mut policy = ModelRetryPolicy::default();
    if let Some(n) = r.attempts {
        policy.max_attempts = n.max(1);
    }
    if let Some(d) = &r.initial {
        policy.initial_backoff = d.duration;
    }
    if let Some(d) = &r.max {
        policy.max_backoff = d.duration;
    }
    if let Some(m) = r.multiplier {
        policy.multiplier = m;
    }
    if let Some(j) = r.jitter {
        policy.jitter = j;
    }
    if let Some(on) = &r.on {
        policy.on = on
            .iter()
            .map(|k| match k {
                RetryKindSpec::RateLimit => RetryOn::RateLimit,
                RetryKindSpec::ServerError => RetryOn::ServerError,
                RetryKindSpec::Timeout => RetryOn::Timeout,
                RetryKindSpec::Connect => RetryOn::Connect,
            })
            .collect();
    }
    policy
}

/// The retry policy of a model: `retry:`, else `retries:` (attempts, the
/// first included), else the client's default.
pub(super) fn retry_policy(spec: &ModelSpec) -> Option<ModelRetryPolicy> {
    if let Some(r) = &spec.retry {
        return Some(retry_policy_of(r));
    }
    spec.retries
        .map(|n| ModelRetryPolicy::new(n, Duration::from_millis(500)))
}

/// The rate limit of a model, if it sets one.
pub(super) fn rate_limit(spec: &ModelSpec) -> Option<RateLimit> {
    spec.rate_limit.map(|r| RateLimit {
        requests_per_minute: r.requests_per_minute,
        tokens_per_minute: r.tokens_per_minute,
        max_concurrent: r.max_concurrent,
    })
}

impl Ctx<'_> {
    /// Model `model_name` for `user`, followed by its `fallback` models
    /// (each with its own script, if scripted) when it lists some.
    pub(super) fn model(
        &mut self,
        model_name: &str,
        user: &str,
        script: Option<&Vec<crate::schema::ReplySpec>>,
        position: ScriptPosition,
    ) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let spec = self.model_spec(model_name)?;
        let first = self.single_model(model_name, user, script, position)?;
        if spec.fallback.is_empty() {
            return Ok(first);
        }
        let mut chain = vec![first];
        for next in &spec.fallback {
            if next == model_name {
                return Err(build_error(format!(
                    "model `{model_name}`: `fallback` names the model itself"
                )));
            }
            if !self.config.spec().models.contains_key(next) {
                return Err(build_error(format!(
                    "model `{model_name}`: `fallback` names unknown model `{next}`"
                )));
            }
            chain.push(self.single_model(next, user, None, position)?);
        }
        let cooldown = spec.cooldown.as_ref().map(|d| d.duration);
        // Every agent on this model skips a model another found failing.
        let cooldowns = self
            .cooldowns
            .entry(model_name.to_string())
            .or_default()
            .clone();
        let mut model = FallbackModel::new(chain).with_cooldowns(cooldowns);
        if let Some(d) = cooldown {
            model = model.cooldown(d);
        }
        Ok(Arc::new(model))
    }
}
