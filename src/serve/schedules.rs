//! The teams' `schedules:`: at each tick of a schedule's cron expression
//! (UTC) a run of its team starts with the schedule's `input`, as
//! `POST /runs` would start it. With a PostgreSQL store shared by several
//! `troupe serve` processes each tick runs once: every worker claims it
//! (`RunLeases::claim_tick`, a row in `troupe_schedule_ticks`) and only the
//! one whose claim lands runs it; with a store one process owns the one
//! server runs every tick. A tick that finds the server full (`max_runs`)
//! or its team's store unreachable is skipped and said.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use troupe::Thread;
use troupe::config::Schedule;

use super::drive::{Start, spawn};
use super::say;
use super::state::Shared;

/// Starts one loop per schedule of every team.
pub(crate) fn start(state: &Shared) {
    for team in state.teams.values() {
        let schedules = match Schedule::all(&team.config.spec().schedules) {
            Ok(s) => s,
            Err(e) => {
                say(&format!("troupe serve: `{}`: schedules: {e}", team.name));
                continue;
            }
        };
        for schedule in schedules {
            let (name, state) = (team.name.clone(), state.clone());
            tokio::spawn(async move { run_ticks(state, name, schedule).await });
        }
    }
}

/// Waits for each tick of `schedule` and runs the ones this server claims.
async fn run_ticks(state: Shared, team: String, schedule: Schedule) {
    let mut after = SystemTime::now();
    while let Some(tick) = schedule.next_after(after) {
        if let Ok(wait) = tick.duration_since(SystemTime::now()) {
            tokio::time::sleep(wait).await;
        }
        after = tick;
        let secs = tick
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        if let Err(e) = fire(&state, &team, &schedule, secs).await {
            say(&format!(
                "troupe serve: `{team}`: schedule `{}`: tick {secs} skipped: {e}",
                schedule.name
            ));
        }
    }
}

/// Claims the tick at `secs` and, when this server's claim lands, starts
/// its run.
async fn fire(state: &Shared, team: &str, schedule: &Schedule, secs: i64) -> Result<(), String> {
    let t = state.team(Some(team)).map_err(|e| e.message)?;
    let mine = t
        .store
        .leases
        .claim_tick(team, &schedule.name, secs)
        .await
        .map_err(|e| e.to_string())?;
    if !mine {
        return Ok(());
    }
    let slot = state.limits.run_slot().map_err(|e| e.message)?;
    let run = state.runs.create(team, &schedule.input, None);
    run.inner().scheduled = Some(json!({"schedule": schedule.name, "tick": secs}));
    let start = Start::Thread(Box::new(Thread::from_messages([troupe::Message::user(
        schedule.input.clone(),
    )])));
    spawn(state.clone(), run, start, slot);
    Ok(())
}
