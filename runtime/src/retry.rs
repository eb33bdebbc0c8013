//! [`RetryPolicy`]: how often and how patiently a failed turn is tried again.
//!
//! Why not `backon`: a retry crate owns a loop that sleeps between tries,
//! while a turn's retry is a state of its run (`BackingOff`) ended by a
//! message the supervisor sends itself after the wait, so the run keeps
//! serving other turns, a cancel or a graceful stop (which leaves the
//! attempt to the resumed run) meanwhile. What the run needs from the
//! policy is whether to try again and how long to wait: two small pure
//! functions.

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

/// A regular expression an error's text must match for a retry
/// ([`RetryPolicy::on_pattern`]); equal when written the same.
#[derive(Debug, Clone)]
pub struct ErrorPattern(regex::Regex);

impl ErrorPattern {
    /// Compiles `pattern` (the `regex` crate's syntax).
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        Ok(ErrorPattern(regex::Regex::new(pattern)?))
    }
    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
    /// Whether `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

impl PartialEq for ErrorPattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
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
    /// Error kinds worth retrying; `None` (and no patterns) retries every
    /// failure (panics too).
    pub retry_on: Option<Vec<ErrorKind>>,
    /// Error texts worth retrying: a failure whose text matches one is
    /// retried whatever its kind. With patterns and no kinds, only
    /// matching failures are retried.
    pub retry_patterns: Vec<ErrorPattern>,
}

impl RetryPolicy {
    /// `max_attempts` attempts, `delay` apart.
    pub fn fixed(max_attempts: u32, delay: Duration) -> Self {
        RetryPolicy {
            max_attempts,
            backoff: Backoff::Fixed(delay),
            retry_on: None,
            retry_patterns: Vec::new(),
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
            retry_patterns: Vec::new(),
        })
    }

    /// Retries only these kinds of failure.
    pub fn on(mut self, kinds: impl IntoIterator<Item = ErrorKind>) -> Self {
        self.retry_on = Some(kinds.into_iter().collect());
        self
    }

    /// Also retries failures whose text matches `pattern` (a regular
    /// expression such as `"rate limit|429"`).
    pub fn on_pattern(mut self, pattern: &str) -> Result<Self, regex::Error> {
        self.retry_patterns.push(ErrorPattern::new(pattern)?);
        Ok(self)
    }

    /// Whether to try again after `attempts_made` attempts failed with
    /// `kind` (`None` for a panic), whatever the error's text.
    pub fn should_retry(&self, attempts_made: u32, kind: Option<ErrorKind>) -> bool {
        self.should_retry_error(attempts_made, kind, "")
    }

    /// Whether to try again after `attempts_made` attempts failed with
    /// `kind` (`None` for a panic) and this error text: its kind is one
    /// retried, or its text matches a pattern.
    ///
    /// ```
    /// use troupe_runtime::{ErrorKind, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// let p = RetryPolicy::fixed(3, Duration::ZERO)
    ///     .on([ErrorKind::Timeout])
    ///     .on_pattern("rate limit|429")?;
    /// assert!(p.should_retry_error(1, Some(ErrorKind::Failed), "HTTP 429"));
    /// assert!(p.should_retry_error(1, Some(ErrorKind::Timeout), "slow"));
    /// assert!(!p.should_retry_error(1, Some(ErrorKind::Failed), "bad request"));
    /// assert!(!p.should_retry_error(3, Some(ErrorKind::Timeout), "slow"));
    /// # Ok::<(), regex::Error>(())
    /// ```
    pub fn should_retry_error(
        &self,
        attempts_made: u32,
        kind: Option<ErrorKind>,
        text: &str,
    ) -> bool {
        if attempts_made >= self.max_attempts {
            return false;
        }
        let by_kind = match (&self.retry_on, kind) {
            (None, _) => self.retry_patterns.is_empty(),
            (Some(kinds), Some(k)) => kinds.contains(&k),
            (Some(_), None) => false,
        };
        by_kind || self.retry_patterns.iter().any(|p| p.is_match(text))
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
