//! An agent's `context:`: one policy (`last` or `max_tokens`), at least 1.

use super::checker::{Checker, at_least_one};
use crate::schema::ContextSpec;
use crate::tree::FieldPath;

/// Checks the context policy at `path`.
pub(super) fn check_context(c: &mut Checker<'_>, path: &FieldPath, context: &ContextSpec) {
    match (context.last, context.max_tokens) {
        (None, None) if !c.lost_part(path) => c.value_error(
            path,
            "a context policy needs its kind",
            Some("`last: N` or `max_tokens: N`".into()),
        ),
        (Some(_), Some(_)) => c.error(
            &path.key("max_tokens"),
            "a context policy is `last` or `max_tokens`, not both",
            Some("one of them".into()),
        ),
        _ => {}
    }
    if context.last == Some(0) {
        at_least_one(c, &path.key("last"));
    }
    if context.max_tokens == Some(0) {
        at_least_one(c, &path.key("max_tokens"));
    }
}
