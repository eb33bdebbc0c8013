//! [`CallObserver`]: what a caller learns about a model call while it
//! happens — each attempt as it starts, each failed attempt that will be
//! retried — so retries inside a client are seen as they happen, not only
//! in the final error.

use std::time::Duration;

use super::ChatModel;
use crate::error::ModelError;

/// Watches one model call ([`ChatModel::complete_observed`],
/// [`ChatModel::stream_observed`]). Called on the task making the call:
/// keep it quick.
///
/// A [`ChatAgent`](crate::ChatAgent) passes one that turns these into
/// events ([`Event::ModelCallStarted`](troupe_runtime::Event::ModelCallStarted),
/// [`Event::ModelCallRetry`](troupe_runtime::Event::ModelCallRetry),
/// [`Event::ModelCallThrottled`](troupe_runtime::Event::ModelCallThrottled)).
///
/// [`ChatModel::complete_observed`]: super::ChatModel::complete_observed
/// [`ChatModel::stream_observed`]: super::ChatModel::stream_observed
pub trait CallObserver: Send + Sync {
    /// Attempt `attempt` (1 for the first) is being sent.
    fn attempt_started(&self, attempt: u32) {
        let _ = attempt;
    }

    /// Attempt `attempt` failed with `error`; the next one is sent after
    /// `delay`.
    fn retrying(&self, attempt: u32, delay: Duration, error: &ModelError) {
        let _ = (attempt, delay, error);
    }

    /// A fallback chain asks `model` (its first, or the next after a
    /// failure, or one whose betters are resting): what follows
    /// (attempts, the answer, its price) is `model`'s.
    fn asking(&self, model: &dyn ChatModel) {
        let _ = model;
    }

    /// Model `failed` of a fallback chain failed for good with `error`,
    /// and `next` takes the call over: what follows (attempts, the
    /// answer, its price) is `next`'s.
    fn failover(&self, failed: &str, error: &ModelError, next: &dyn ChatModel) {
        let _ = (failed, error, next);
    }

    /// The call waited `waited` for the model's rate limit
    /// ([`RateLimiter`](super::RateLimiter)) before its attempt was sent.
    fn waiting_for_capacity(&self, waited: Duration) {
        let _ = waited;
    }

    /// The path of the agent making the call (`team/nested_team/agent`),
    /// if the caller says: a [`Cassette`](super::Cassette) keys calls by it.
    fn path(&self) -> Option<&str> {
        None
    }

    /// The id of the run the call is made in, if the caller says.
    fn run_id(&self) -> Option<&str> {
        None
    }
}

/// An observer that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl CallObserver for NoObserver {}
