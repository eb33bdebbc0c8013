//! `stop:`: a stop condition that can hold.

use super::checker::Checker;
use crate::schema::StopSpec;
use crate::tree::FieldPath;

/// Checks the stop condition at `path` and the ones it nests.
pub(super) fn check_stop(c: &mut Checker<'_>, path: &FieldPath, s: &StopSpec) {
    let given = s.max_messages.is_some()
        || s.max_turns.is_some()
        || s.text_mention.is_some()
        || s.source_match.is_some()
        || s.handoff.is_some()
        || s.token_budget.is_some()
        || s.timeout.is_some()
        || s.all.is_some()
        || s.any.is_some();
    if !given && !c.lost_part(path) {
        c.error(
            path,
            "an empty stop condition never holds",
            Some("one of `max_messages`, `max_turns`, `text_mention`, `source_match`, `handoff`, `token_budget`, `timeout`, `all`, `any`".into()),
        );
    }
    // A count of 0 holds before the first turn: the run would do nothing.
    for (field, n) in [
        ("max_messages", s.max_messages),
        ("max_turns", s.max_turns),
        ("token_budget", s.token_budget),
    ] {
        if n == Some(0) {
            c.value_error(
                &path.key(field),
                format!("`{field}: 0` stops the run before it starts"),
                Some("a number of at least 1".into()),
            );
        }
    }
    for (field, list) in [("all", &s.all), ("any", &s.any)] {
        if let Some(list) = list {
            if list.is_empty() {
                c.value_error(
                    &path.key(field),
                    "an empty list",
                    Some("stop conditions".into()),
                );
            }
            for (i, sub) in list.iter().enumerate() {
                check_stop(c, &path.key(field).index(i), sub);
            }
        }
    }
}
