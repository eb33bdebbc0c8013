//! A `retry` section as the runtime's [`RetryPolicy`].

use std::time::Duration;

use troupe_runtime::{ErrorKind, RetryPolicy, retry::Backoff, retry::ErrorPattern};

use crate::schema::{BackoffSpec, RetryOnSpec, RetrySpec};

/// cagent counts retries after the first failure; the runtime counts
/// attempts, the first included.
pub(super) fn retry_policy(r: &RetrySpec) -> RetryPolicy {
    let delay = r
        .delay
        .as_ref()
        .map_or(Duration::from_secs(1), |d| d.duration);
    let backoff = match r.backoff.unwrap_or(BackoffSpec::Fixed) {
        BackoffSpec::Fixed => Backoff::Fixed(delay),
        BackoffSpec::Exponential => Backoff::Exponential {
            initial: delay,
            max: r
                .max_delay
                .as_ref()
                .map_or(Duration::from_secs(30), |d| d.duration),
            factor: 2.0,
        },
    };
    let on = r.on.as_deref().unwrap_or_default();
    let kinds: Vec<ErrorKind> = on
        .iter()
        .filter_map(|o| match o {
            RetryOnSpec::Kind(k) => Some(*k),
            RetryOnSpec::Pattern(_) => None,
        })
        .collect();
    // A pattern that does not compile was reported by validation.
    let retry_patterns = on
        .iter()
        .filter_map(|o| match o {
            RetryOnSpec::Pattern(p) => ErrorPattern::new(&p.pattern).ok(),
            RetryOnSpec::Kind(_) => None,
        })
        .collect();
    RetryPolicy {
        max_attempts: r.max_attempts.saturating_add(1),
        backoff,
        retry_on: (r.on.is_some() && !kinds.is_empty()).then_some(kinds),
        retry_patterns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> RetryPolicy {
        let spec: RetrySpec = serde_saphyr::from_str(yaml).expect("a retry section");
        retry_policy(&spec)
    }

    #[test]
    fn retries_count_after_the_first_attempt_and_name_runtime_kinds() {
        let p = policy("max_attempts: 2\non: [rate_limit, node]\n");
        assert_eq!(p.max_attempts, 3);
        assert_eq!(
            p.retry_on,
            Some(vec![ErrorKind::Transient, ErrorKind::Node])
        );
        assert_eq!(p.backoff, Backoff::Fixed(Duration::from_secs(1)));
        let p = policy("max_attempts: 2\non: [timeout, {pattern: \"rate limit|429\"}]\n");
        assert_eq!(p.retry_on, Some(vec![ErrorKind::Timeout]));
        assert_eq!(p.retry_patterns.len(), 1);
        assert!(p.should_retry_error(1, Some(ErrorKind::Failed), "HTTP 429"));
        assert!(!p.should_retry_error(1, Some(ErrorKind::Failed), "HTTP 400"));
        let p = policy("max_attempts: 2\non: [{pattern: overloaded}]\n");
        assert_eq!(p.retry_on, None);
        assert!(!p.should_retry_error(1, Some(ErrorKind::Timeout), "slow"));
        let p = policy("max_attempts: 1\nbackoff: exponential\ndelay: 200ms\n");
        assert_eq!(p.retry_on, None);
        assert_eq!(
            p.backoff,
            Backoff::Exponential {
                initial: Duration::from_millis(200),
                max: Duration::from_secs(30),
                factor: 2.0
            }
        );
    }
}
