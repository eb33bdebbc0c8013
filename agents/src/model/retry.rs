//! When and how long to wait before trying a failed model call again.
//!
//! Why not `backon` here (it runs `troupe serve`'s webhook retries): the
//! policy is configuration (`retry:` on a model, public fields read from
//! YAML) whose wait is a pure function of the attempt, and the loop that
//! uses it (`http/calls.rs`) does more between two tries than a retry
//! crate's loop offers hooks for: it waits for the rate limiter before
//! every try, penalizes every caller of the limiter on a 429, lets a
//! server's `Retry-After` replace the wait, tells the call observer, and
//! wraps the last error as [`ModelError::RetriesExhausted`]. Its jitter
//! (a wait drawn from half to all of the computed one) is not backon's
//! (which adds up to the whole wait again), and the tests pin its bounds.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use crate::error::ModelError;

/// A kind of failure a retry policy may try again after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryOn {
    /// The server refused for a rate limit (HTTP 429).
    RateLimit,
    /// The server failed (HTTP 5xx, Anthropic's 529 included).
    ServerError,
    /// No answer in time (the client's timeout, or HTTP 408).
    Timeout,
    /// The server could not be reached, or the connection dropped.
    Connect,
}

impl RetryOn {
    /// Every kind: what a policy retries by default.
    pub const ALL: [RetryOn; 4] = [
        RetryOn::RateLimit,
        RetryOn::ServerError,
        RetryOn::Timeout,
        RetryOn::Connect,
    ];

    /// The kind of `error`, if it is one that may pass.
    pub fn of(error: &ModelError) -> Option<RetryOn> {
        match error {
            ModelError::Status { status: 429, .. } => Some(RetryOn::RateLimit),
            ModelError::Status { status: 408, .. } | ModelError::Timeout { .. } => {
                Some(RetryOn::Timeout)
            }
            ModelError::Status { status, .. } if (500..=599).contains(status) => {
                Some(RetryOn::ServerError)
            }
            ModelError::Connect { .. } => Some(RetryOn::Connect),
            ModelError::RetriesExhausted { last, .. } => RetryOn::of(last),
            _ => None,
        }
    }
}

/// Retries with exponential backoff.
///
/// A retryable failure (see [`ModelError::is_retryable`](crate::ModelError::is_retryable))
/// of a kind in `on` is tried again after `initial_backoff`, then
/// `multiplier` times that, and so on up to `max_backoff`, until
/// `max_attempts` attempts were made. When the server
/// says how long to wait (`Retry-After` in seconds or as an HTTP date, or
/// `retry-after-ms`), that wait is used instead, capped at
/// `max_retry_after` so a server cannot park the caller for an hour.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// Longest computed wait.
    pub max_backoff: Duration,
    /// Longest server-requested wait honoured.
    pub max_retry_after: Duration,
    /// Randomise each computed wait between half and all of it, so many
    /// clients failing together do not retry together.
    pub jitter: bool,
    /// Factor between two computed waits (default 2).
    pub multiplier: f64,
    /// The kinds of failure tried again (default: all of them).
    pub on: Vec<RetryOn>,
}

impl Default for ModelRetryPolicy {
    fn default() -> Self {
        ModelRetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
            multiplier: 2.0,
            on: RetryOn::ALL.to_vec(),
        }
    }
}

impl ModelRetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        ModelRetryPolicy {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// `max_attempts` attempts, starting with `initial_backoff`.
    pub fn new(max_attempts: u32, initial_backoff: Duration) -> Self {
        ModelRetryPolicy {
            max_attempts: max_attempts.max(1),
            initial_backoff,
            ..Self::default()
        }
    }

    /// Sets whether waits are randomised.
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets the factor between two computed waits.
    pub fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// Sets the kinds of failure tried again.
    pub fn retry_on(mut self, on: impl IntoIterator<Item = RetryOn>) -> Self {
        self.on = on.into_iter().collect();
        self
    }

    /// Whether `error` is of a kind this policy tries again.
    pub fn retries(&self, error: &ModelError) -> bool {
        error.is_retryable() && RetryOn::of(error).is_some_and(|k| self.on.contains(&k))
    }

    /// The wait after failed attempt number `attempt` (1-based), given what
    /// the server asked for.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.max_retry_after);
        }
        let multiplier = if self.multiplier.is_finite() && self.multiplier >= 1.0 {
            self.multiplier
        } else {
            1.0
        };
        let exponent = attempt.saturating_sub(1).min(64) as i32;
        let factor = multiplier.powi(exponent).min(1e9);
        let computed = Duration::try_from_secs_f64(self.initial_backoff.as_secs_f64() * factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff);
        if self.jitter {
            computed.mul_f64(0.5 + 0.5 * fastrand::f64())
        } else {
            computed
        }
    }
}

/// The wait a response asks for: `retry-after-ms` (OpenAI, Azure), else
/// `Retry-After` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The wait a 429 implies through rate-limit headers when it has no
/// `Retry-After`: the longest of OpenAI's `x-ratelimit-reset-requests` and
/// `x-ratelimit-reset-tokens` (`1s`, `6m0s`, `250ms`).
pub(crate) fn rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|name| headers.get(*name)?.to_str().ok())
        .filter_map(go_duration)
        .max()
}

/// A duration as Go prints it (`1m30.5s`, `20ms`), or plain seconds.
fn go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = ModelRetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(1),
            jitter: false,
            multiplier: 2.0,
            on: RetryOn::ALL.to_vec(),
        };
        assert_eq!(p.delay(1, None), Duration::from_millis(100));
        assert_eq!(p.delay(2, None), Duration::from_millis(200));
        assert_eq!(p.delay(3, None), Duration::from_millis(350));
        assert_eq!(p.delay(40, None), Duration::from_millis(350));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(5))),
            Duration::from_secs(1)
        );
        let jittered = p.with_jitter(true).delay(2, None);
        assert!(jittered >= Duration::from_millis(100) && jittered <= Duration::from_millis(200));
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }

    #[test]
    fn rate_limit_reset_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(rate_limit_reset(&h), None);
        h.insert("x-ratelimit-reset-requests", HeaderValue::from_static("1s"));
        h.insert(
            "x-ratelimit-reset-tokens",
            HeaderValue::from_static("1m2.5s"),
        );
        assert_eq!(rate_limit_reset(&h), Some(Duration::from_secs_f64(62.5)));
        h.insert("x-ratelimit-reset-tokens", HeaderValue::from_static("20ms"));
        assert_eq!(rate_limit_reset(&h), Some(Duration::from_secs(1)));
    }

    #[test]
    fn the_multiplier_and_the_kinds_are_the_policys() {
        let p = ModelRetryPolicy::new(5, Duration::from_millis(100))
            .with_jitter(false)
            .with_multiplier(3.0)
            .retry_on([RetryOn::ServerError]);
        assert_eq!(p.delay(3, None), Duration::from_millis(900));
        let status = |status| ModelError::Status {
            endpoint: "e".into(),
            status,
            body: String::new(),
            retry_after: None,
        };
        assert!(p.retries(&status(503)));
        assert!(!p.retries(&status(429)));
        assert!(!p.retries(&status(400)));
    }
}
