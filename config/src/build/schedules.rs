//! [`Schedule`]: a `schedules:` entry with its cron expression parsed.

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use croner::Cron;

use crate::schema::{ScheduleSpec, parse_cron};

/// A schedule ready to run: its name, task and ticks.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Its name (`name:`, else `schedule-N`).
    pub name: String,
    /// The task each run is given.
    pub input: String,
    cron: Cron,
}

impl Schedule {
    /// The schedule `spec` (the `index`-th) describes.
    pub fn new(spec: &ScheduleSpec, index: usize) -> Result<Schedule, String> {
        Ok(Schedule {
            name: spec.name_or_default(index),
            input: spec.input.clone(),
            cron: parse_cron(&spec.cron)?,
        })
    }

    /// Every schedule of `specs`, in order.
    pub fn all(specs: &[ScheduleSpec]) -> Result<Vec<Schedule>, String> {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| Schedule::new(s, i))
            .collect()
    }

    /// The first tick strictly after `after` (UTC), if there is one.
    pub fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let after: DateTime<Utc> = after.into();
        self.cron
            .find_next_occurrence(&after, false)
            .ok()
            .map(SystemTime::from)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn spec(cron: &str) -> ScheduleSpec {
        ScheduleSpec {
            cron: cron.into(),
            input: "go".into(),
            name: None,
        }
    }

    #[test]
    fn five_and_six_fields_tick_when_they_say() {
        let every_second = Schedule::new(&spec("*/1 * * * * *"), 0).expect("parses");
        assert_eq!(every_second.name, "schedule-1");
        let t = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(every_second.next_after(t), Some(t + Duration::from_secs(1)));
        // 1970-01-12 13:46:40 UTC was a Monday: next 09:00 is Tuesday's.
        let weekdays = Schedule::new(&spec("0 9 * * MON-FRI"), 1).expect("parses");
        let next = weekdays.next_after(t).expect("a tick");
        let secs = next.duration_since(UNIX_EPOCH).expect("after").as_secs();
        assert_eq!(secs % 86_400, 9 * 3600);
        assert_eq!(secs / 86_400, 1_000_000 / 86_400 + 1);
        assert!(Schedule::new(&spec("61 * * * *"), 0).is_err());
        assert!(Schedule::new(&spec("every day"), 0).is_err());
    }
}
