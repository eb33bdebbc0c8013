//! `retry:` of a step or a graph node: kinds of failure that can be
//! retried.

use troupe_runtime::ErrorKind;

use super::checker::Checker;
use crate::schema::RetrySpec;
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
    for (i, kind) in r.on.iter().flatten().enumerate() {
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
