//! [`RetryPolicy`]: how often and how patiently a failed turn is tried again.

use std::time::Duration;

use crate::agent::ErrorKind;

/// How long to wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backoff {
    /// The same wait every time.
    Fixed(Duration),
    /// `initial`, then multiplied by `factor` each time, never above `max`.
    Exponential {
        /// The first wait.
        initial: Duration,
        /// The longest wait.
        max: Duration,
        /// The growth per attempt.
        factor: f64,
    },
}

/// Retries of a failed turn. A retry runs the turn again on the same thread;
/// nothing downstream sees the failed attempts.
///
/// ```
/// use std::time::Duration;
/// use troupe_runtime::{ErrorKind, RetryPolicy};
///
/// let policy = RetryPolicy::exponential(4, "100ms", "2s").unwrap().on([ErrorKind::Transient]);
/// assert_eq!(policy.delay(1), Duration::from_millis(100));
/// assert_eq!(policy.delay(2), Duration::from_millis(200));
/// assert!(policy.should_retry(2, Some(ErrorKind::Transient)));
/// assert!(!policy.should_retry(4, Some(ErrorKind::Transient))); // 4 attempts made
/// assert!(!policy.should_retry(1, Some(ErrorKind::Failed)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Waits between attempts.
    pub backoff: Backoff,
    /// Error kinds worth retrying; `None` retries every failure (panics too).
    pub retry_on: Option<Vec<ErrorKind>>,
}

impl RetryPolicy {
    /// `max_attempts` attempts, `delay` apart.
    pub fn fixed(max_attempts: u32, delay: Duration) -> Self {
        RetryPolicy {
            max_attempts,
            backoff: Backoff::Fixed(delay),
            retry_on: None,
        }
    }

    /// `max_attempts` attempts with doubling waits from `initial` up to
    /// `max` (humantime strings such as `"200ms"`, `"5s"`).
    pub fn exponential(
        max_attempts: u32,
        initial: &str,
        max: &str,
    ) -> Result<Self, humantime::DurationError> {
        Ok(RetryPolicy {
            max_attempts,
            backoff: Backoff::Exponential {
                initial: humantime::parse_duration(initial)?,
                max: humantime::parse_duration(max)?,
                factor: 2.0,
            },
            retry_on: None,
        })
    }

    /// Retries only these kinds of failure.
    pub fn on(mut self, kinds: impl IntoIterator<Item = ErrorKind>) -> Self {
        self.retry_on = Some(kinds.into_iter().collect());
        self
    }

    /// Whether to try again after `attempts_made` attempts failed with
    /// `kind` (`None` for a panic).
    pub fn should_retry(&self, attempts_made: u32, kind: Option<ErrorKind>) -> bool {
        attempts_made < self.max_attempts
            && match (&self.retry_on, kind) {
                (None, _) => true,
                (Some(kinds), Some(k)) => kinds.contains(&k),
                (Some(_), None) => false,
            }
    }

    /// The wait before attempt `attempts_made + 1`.
    pub fn delay(&self, attempts_made: u32) -> Duration {
        match self.backoff {
            Backoff::Fixed(d) => d,
            Backoff::Exponential {
                initial,
                max,
                factor,
            } => {
                let exp = attempts_made.saturating_sub(1).min(64) as i32;
                let secs = initial.as_secs_f64() * factor.powi(exp);
                Duration::from_secs_f64(secs.min(max.as_secs_f64()))
            }
        }
    }
}
