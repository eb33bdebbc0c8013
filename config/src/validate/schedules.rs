//! `schedules:`: a cron expression that parses, a task, unique names.

use std::collections::BTreeSet;

use super::checker::{Checker, p};
use crate::schema::{ScheduleSpec, parse_cron};

/// Checks the schedules.
pub(super) fn check_schedules(c: &mut Checker<'_>, schedules: &[ScheduleSpec]) {
    let mut names = BTreeSet::new();
    for (i, s) in schedules.iter().enumerate() {
        let at = p(&["schedules"]).index(i);
        if let Err(e) = parse_cron(&s.cron) {
            c.value_error(
                &at.key("cron"),
                format!("`{}` is not a cron expression: {e}", s.cron),
                Some(
                    "5 fields (`0 9 * * MON-FRI`) or 6 with seconds first (`*/10 * * * * *`)"
                        .into(),
                ),
            );
        }
        if s.input.trim().is_empty() {
            c.value_error(&at.key("input"), "the schedule's `input` is empty", None);
        }
        let name = s.name_or_default(i);
        if !names.insert(name.clone()) {
            c.value_error(
                &at.key("name"),
                format!("two schedules are named `{name}`"),
                Some("a name of its own".into()),
            );
        }
    }
}
