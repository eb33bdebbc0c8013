//! `serve:`: limits of at least 1, timeouts longer than zero.

use super::checker::{Checker, at_least_one, p};
use crate::duration::HumanDuration;
use crate::schema::ServeSpec;

/// Checks the serve section.
pub(super) fn check_serve(c: &mut Checker<'_>, s: &ServeSpec) {
    let base = p(&["serve"]);
    for (key, value) in [
        ("max_body", s.max_body),
        ("max_runs", s.max_runs),
        ("max_connections", s.max_connections),
    ] {
        if value == Some(0) {
            at_least_one(c, &base.key(key));
        }
    }
    for (key, value) in [
        ("header_timeout", &s.header_timeout),
        ("body_timeout", &s.body_timeout),
        ("idle_timeout", &s.idle_timeout),
    ] {
        if value
            .as_ref()
            .is_some_and(|d: &HumanDuration| d.duration.is_zero())
        {
            c.value_error(
                &base.key(key),
                "a timeout of zero would close every connection",
                Some("a duration such as `10s`".into()),
            );
        }
    }
}
