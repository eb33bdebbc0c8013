//! `schedules:`: runs `troupe serve` starts on a cron schedule.

use schemars::JsonSchema;
use serde::Deserialize;

/// A run started on a schedule by `troupe serve` (once per tick across
/// every server sharing a PostgreSQL store).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// When, in UTC: a cron expression of 5 fields (`0 9 * * MON-FRI`) or
    /// 6 with seconds first (`*/10 * * * * *`).
    pub cron: String,
    /// The task each run is given.
    pub input: String,
    /// Its name (in logs and the tick's claim); default `schedule-N`, N
    /// its place in the list from 1.
    #[serde(default)]
    pub name: Option<String>,
}

impl ScheduleSpec {
    /// Its name, or `schedule-N` for the `index`-th (from 0).
    pub fn name_or_default(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("schedule-{}", index + 1))
    }
}

/// Parses a cron expression: 5 fields, or 6 with seconds first.
pub(crate) fn parse_cron(expr: &str) -> Result<croner::Cron, String> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Optional)
        .build()
        .parse(expr)
        .map_err(|e| e.to_string())
}
