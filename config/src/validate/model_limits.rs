//! A model's `retry:`, `rate_limit:` and `fallback:`: one way to say
//! retries, numbers in range, fallbacks that exist.

use super::checker::{Checker, Defined, p};
use crate::schema::{ModelRetrySpec, ModelSpec};
use crate::tree::FieldPath;

/// Checks model `name`'s traffic settings.
pub(super) fn check_model_limits(c: &mut Checker<'_>, names: &Defined, name: &str, m: &ModelSpec) {
    let base = p(&["models", name]);
    if let Some(r) = &m.retry {
        if m.retries.is_some() {
            c.error(
                &base.key("retries"),
                "`retries` and `retry` both set the attempts",
                Some("`retry: {attempts: n}` alone".into()),
            );
        }
        check_retry(c, &base.key("retry"), r);
    }
    if let Some(r) = &m.rate_limit {
        for (field, value) in [
            ("requests_per_minute", r.requests_per_minute),
            ("tokens_per_minute", r.tokens_per_minute),
            ("max_concurrent", r.max_concurrent),
        ] {
            if value == Some(0) {
                c.value_error(
                    &base.key("rate_limit").key(field),
                    "0 would never let a call through",
                    Some("1 or more (leave it out for no limit)".into()),
                );
            }
        }
    }
    for (i, next) in m.fallback.iter().enumerate() {
        let at = base.key("fallback").index(i);
        if next == name {
            c.value_error(
                &at,
                format!("model `{name}` cannot fall back to itself"),
                None,
            );
        } else if !names.model(next) {
            c.value_error(
                &at,
                format!("unknown model `{next}`"),
                names.expected_models(),
            );
        }
    }
    if m.cooldown.is_some() && m.fallback.is_empty() {
        c.error(
            &base.key("cooldown"),
            "`cooldown` is only used with `fallback`",
            Some("`fallback: [other_model]`".into()),
        );
    }
}

/// Checks a `retry:` section at `at` (a model's, an A2A agent's).
pub(super) fn check_retry(c: &mut Checker<'_>, at: &FieldPath, r: &ModelRetrySpec) {
    if r.attempts == Some(0) {
        c.value_error(
            &at.key("attempts"),
            "must be at least 1 (attempts, the first included)",
            Some("1 or more".into()),
        );
    }
    if let Some(x) = r.multiplier
        && !(x.is_finite() && x >= 1.0)
    {
        c.value_error(
            &at.key("multiplier"),
            format!("multiplier {x} would not grow the wait"),
            Some("a number of at least 1, such as 2".into()),
        );
    }
    if r.on.as_ref().is_some_and(Vec::is_empty) {
        c.value_error(
            &at.key("on"),
            "an empty `on` retries nothing",
            Some(
                "`attempts: 1` to never retry, or kinds such as [rate_limit, server_error]".into(),
            ),
        );
    }
}
