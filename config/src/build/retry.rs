//! A `retry` section as the runtime's [`RetryPolicy`].

use std::time::Duration;

use troupe_runtime::{Backoff, RetryPolicy};

use crate::schema::{BackoffSpec, RetrySpec};

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
    RetryPolicy {
        max_attempts: r.max_attempts.saturating_add(1),
        backoff,
        retry_on: r.on.clone(),
    }
}
