//! `retry:` of a step or a graph node: kinds of failure that can be
//! retried.

use troupe_runtime::ErrorKind;

use super::checker::Checker;
use crate::schema::{RetryOnSpec, RetrySpec};
use crate::tree::FieldPath;

/// Checks the retry at `path`: a cancelled turn ends its run and is never
/// retried, so `cancelled` has no place in `on:`.
pub(super) fn check_retry(c: &mut Checker<'_>, path: &FieldPath, r: &RetrySpec) {
    if r.max_attempts == 0 {
        c.value_error(
            &path.key("max_attempts"),
            "`max_attempts: 0` never retries",
            Some("a number of retries of at least 1 (or no `retry:`)".into()),
        );
    }
    for (i, on) in r.on.iter().flatten().enumerate() {
        let kind = match on {
            RetryOnSpec::Kind(k) => k,
            RetryOnSpec::Pattern(p) => {
                check_pattern(c, &path.key("on").index(i).key("pattern"), &p.pattern);
                continue;
            }
        };
        if *kind == ErrorKind::Cancelled {
            c.value_error(
                &path.key("on").index(i),
                "a cancelled turn is never retried",
                Some(
                    "one of `failed`, `transient` (or `rate_limit`), `timeout`, `model`, `tool`, `workflow`, `node`"
                        .into(),
                ),
            );
        }
    }
}

/// A `pattern:` that must compile and must not match every text.
fn check_pattern(c: &mut Checker<'_>, path: &FieldPath, pattern: &str) {
    match regex::Regex::new(pattern) {
        Err(e) => {
            let detail = e.to_string();
            let last = detail.lines().last().unwrap_or("").trim().to_string();
            c.value_error(
                path,
                format!("invalid regular expression: {last}"),
                Some(
                    "a regular expression (the `regex` crate's syntax), e.g. `rate limit|429`"
                        .into(),
                ),
            );
        }
        Ok(re) if re.is_match("") => c.value_error(
            path,
            format!("`{pattern}` matches every error text"),
            Some("a pattern some error texts do not match (or no `on:`)".into()),
        ),
        Ok(_) => {}
    }
}
