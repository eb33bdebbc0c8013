//! When and how long to wait before trying a failed model call again.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Retries with exponential backoff.
///
/// A retryable failure (see [`ModelError::is_retryable`](crate::ModelError::is_retryable))
/// is tried again after `initial_backoff`, then twice that, and so on up to
/// `max_backoff`, until `max_attempts` attempts were made. When the server
/// says how long to wait (`Retry-After` in seconds or as an HTTP date, or
/// `retry-after-ms`), that wait is used instead, capped at
/// `max_retry_after` so a server cannot park the caller for an hour.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// `max_attempts` attempts, starting with `initial_backoff`.
    pub fn new(max_attempts: u32, initial_backoff: Duration) -> Self {
        RetryPolicy {
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

    /// The wait after failed attempt number `attempt` (1-based), given what
    /// the server asked for.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.max_retry_after);
        }
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        let computed = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        if self.jitter {
            computed.mul_f64(0.5 + 0.5 * unit_random())
        } else {
            computed
        }
    }
}

/// A number in [0, 1) good enough for jitter (no RNG dependency needed).
fn unit_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(1),
            jitter: false,
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
}
