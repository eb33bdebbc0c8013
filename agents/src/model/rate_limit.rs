//! Rate limits shared by every caller of a model in the process: the
//! [`RateLimiter`] trait, the in-process [`LocalRateLimiter`] (token buckets
//! for requests and tokens, a cap on calls in flight, a pause every caller
//! honours after a 429), and the registry that hands every client of the
//! same model and endpoint the same limiter.
//!
//! Why not `governor`: its GCRA limiters check one quota at a time, and a
//! call here must take a request slot and its tokens together or neither
//! (two governor limiters would spend the request slot of a call the token
//! bucket then refuses); a call larger than the bucket is refused by
//! governor (`InsufficientCapacity`) where here it waits for a full bucket
//! and leaves it in debt; the pause after a 429 holds every caller, which
//! governor has no notion of; and its clocks are not tokio's, so the tests
//! that run on paused time (`start_paused`) would need a clock adapter
//! while its `until_ready` sleeps on `futures-timer`. The buckets are the
//! ~60 lines of `try_take`; with governor they would become about as many
//! lines of glue around two limiters and a third dependency tree (quanta,
//! dashmap, rand under its default features).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// How fast a model may be called (`rate_limit:` on a model). Every field
/// is optional; an unset one does not limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    /// Requests per minute, spread evenly: one every `60 s / n`.
    pub requests_per_minute: Option<u32>,
    /// Tokens per minute (prompt estimated before the call, plus
    /// `max_tokens` when set); up to a minute's worth may go at once.
    pub tokens_per_minute: Option<u32>,
    /// Calls in flight at once (a stream counts until it ends).
    pub max_concurrent: Option<u32>,
}

impl RateLimit {
    /// Whether it limits anything.
    pub fn is_unlimited(&self) -> bool {
        self.requests_per_minute.is_none()
            && self.tokens_per_minute.is_none()
            && self.max_concurrent.is_none()
    }
}

/// The right to send one request, from [`RateLimiter::acquire`]: hold it
/// while the call runs (for `max_concurrent`), drop it when the call ends.
pub struct Permit {
    waited: Duration,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("waited", &self.waited)
            .finish()
    }
}

impl Permit {
    /// A permit granted after waiting `waited`, holding nothing.
    pub fn new(waited: Duration) -> Self {
        Permit {
            waited,
            _guard: None,
        }
    }

    /// A permit that keeps `guard` (a semaphore permit, a lease of a
    /// cluster-wide limiter) until it is dropped.
    pub fn with_guard(waited: Duration, guard: impl Send + Sync + 'static) -> Self {
        Permit {
            waited,
            _guard: Some(Box::new(guard)),
        }
    }

    /// How long the caller waited for capacity.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

/// Decides when a model call may be sent, for every caller of a model at
/// once.
///
/// [`LocalRateLimiter`] shares its buckets within one process. The trait is
/// the seam for sharing them wider: a limiter backed by the cluster (or by
/// a store such as Redis) implements it and is given to a client with
/// [`HttpModelBuilder::rate_limiter`](crate::model::HttpModelBuilder::rate_limiter);
/// nothing else changes.
#[async_trait]
pub trait RateLimiter: Send + Sync + 'static {
    /// Waits until a request of about `estimated_tokens` tokens may be sent
    /// and returns the permit to hold while it runs.
    async fn acquire(&self, estimated_tokens: u64) -> Permit;

    /// The server refused for a rate limit and asked to wait `retry_after`:
    /// nobody sends before then.
    fn penalize(&self, retry_after: Duration);
}

/// Token buckets in this process: requests spaced evenly at
/// `requests_per_minute`, a bucket of `tokens_per_minute` refilled
/// continuously, at most `max_concurrent` calls in flight, and a pause
/// after a 429 that holds every caller back.
pub struct LocalRateLimiter {
    limit: RateLimit,
    state: Mutex<State>,
    concurrent: Option<Arc<Semaphore>>,
}

impl fmt::Debug for LocalRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalRateLimiter")
            .field("limit", &self.limit)
            .finish()
    }
}

struct State {
    /// When the next request may go.
    next_request: Instant,
    /// Tokens in the bucket at `refilled`.
    tokens: f64,
    refilled: Instant,
    /// Nobody sends before this (a server's `Retry-After`).
    paused_until: Instant,
}

impl LocalRateLimiter {
    /// A limiter of its own (use [`shared_limiter`] to share one per model).
    pub fn new(limit: RateLimit) -> Self {
        let now = Instant::now();
        LocalRateLimiter {
            limit,
            state: Mutex::new(State {
                next_request: now,
                tokens: limit.tokens_per_minute.map_or(0.0, f64::from),
                refilled: now,
                paused_until: now,
            }),
            concurrent: limit
                .max_concurrent
                .map(|n| Arc::new(Semaphore::new(n.max(1) as usize))),
        }
    }

    /// The limits it enforces.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the capacity for one request if it is there now; else says
    /// when to look again.
    fn try_take(&self, tokens: f64) -> Result<(), Instant> {
        let now = Instant::now();
        let mut s = self.lock();
        let mut ready = s.paused_until.max(s.next_request);
        if let Some(tpm) = self.limit.tokens_per_minute {
            let capacity = f64::from(tpm.max(1));
            let per_sec = capacity / 60.0;
            let elapsed = now.saturating_duration_since(s.refilled).as_secs_f64();
            s.tokens = (s.tokens + elapsed * per_sec).min(capacity);
            s.refilled = now;
            // A request bigger than the bucket waits for a full bucket.
            let need = tokens.min(capacity);
            if s.tokens < need {
                ready = ready.max(now + Duration::from_secs_f64((need - s.tokens) / per_sec));
            }
        }
        if ready > now {
            return Err(ready);
        }
        if let Some(rpm) = self.limit.requests_per_minute {
            let spacing = Duration::from_secs_f64(60.0 / f64::from(rpm.max(1)));
            s.next_request = s.next_request.max(now) + spacing;
        }
        if self.limit.tokens_per_minute.is_some() {
            s.tokens -= tokens;
        }
        Ok(())
    }
}

#[async_trait]
impl RateLimiter for LocalRateLimiter {
    async fn acquire(&self, estimated_tokens: u64) -> Permit {
        let started = Instant::now();
        let slot = match &self.concurrent {
            // The semaphore is never closed.
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        while let Err(ready) = self.try_take(estimated_tokens as f64) {
            tokio::time::sleep_until(ready).await;
        }
        let waited = started.elapsed();
        match slot {
            Some(slot) => Permit::with_guard(waited, Slot(slot)),
            None => Permit::new(waited),
        }
    }

    fn penalize(&self, retry_after: Duration) {
        let until = Instant::now() + retry_after;
        let mut s = self.lock();
        s.paused_until = s.paused_until.max(until);
    }
}

/// A place among the calls in flight.
struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

/// The process's limiters, one per model and endpoint.
fn registry() -> &'static Mutex<HashMap<String, Arc<LocalRateLimiter>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<LocalRateLimiter>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The limiter every client of `model` at `endpoint` shares in this
/// process: the first caller's `limit` makes it; later callers get the
/// same one (with stricter limits given, a new one replaces it for the
/// clients built from then on).
pub fn shared_limiter(model: &str, endpoint: &str, limit: RateLimit) -> Arc<LocalRateLimiter> {
    let key = format!("{model} @ {endpoint}");
    let mut map = registry().lock().unwrap_or_else(|p| p.into_inner());
    match map.get(&key) {
        Some(existing) if existing.limit() == limit => existing.clone(),
        _ => {
            let limiter = Arc::new(LocalRateLimiter::new(limit));
            map.insert(key, limiter.clone());
            limiter
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_are_spaced_and_a_penalty_holds_everyone() {
        let limiter = LocalRateLimiter::new(RateLimit {
            requests_per_minute: Some(600),
            ..RateLimit::default()
        });
        let start = Instant::now();
        for _ in 0..5 {
            limiter.acquire(0).await;
        }
        assert_eq!(start.elapsed(), Duration::from_millis(400));
        limiter.penalize(Duration::from_secs(2));
        let permit = limiter.acquire(0).await;
        assert_eq!(permit.waited(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_and_concurrency_are_limited() {
        let limiter = Arc::new(LocalRateLimiter::new(RateLimit {
            tokens_per_minute: Some(600),
            max_concurrent: Some(1),
            ..RateLimit::default()
        }));
        let first = limiter.acquire(600).await;
        assert_eq!(first.waited(), Duration::ZERO);
        let other = limiter.clone();
        let second = tokio::spawn(async move { other.acquire(100).await.waited() });
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(first);
        // 100 tokens refill in 10 s; the slot was free after 30.
        assert_eq!(second.await.unwrap(), Duration::from_secs(30));
    }

    #[test]
    fn one_limiter_per_model_and_endpoint() {
        let limit = RateLimit {
            requests_per_minute: Some(60),
            ..RateLimit::default()
        };
        let a = shared_limiter("m", "http://x/v1", limit);
        let b = shared_limiter("m", "http://x/v1", limit);
        let c = shared_limiter("m", "http://y/v1", limit);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
    }
}
