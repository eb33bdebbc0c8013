//! Each team's store kept to its retention (`checkpoint: {retention: …}`)
//! in the background: at the start, then every tenth of the shortest age
//! it sets (between a minute and an hour; hourly when it sets only a
//! checkpoint count).

use std::time::{Duration, SystemTime};

use super::say;
use super::state::Shared;

/// The shortest pause between two passes.
const MIN_PAUSE: Duration = Duration::from_secs(60);
/// The age at which the board's records go when the retention sets only
/// a checkpoint count.
const BOARD_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest pause between two passes.
const MAX_PAUSE: Duration = Duration::from_secs(3600);

/// Starts a pass loop for every team whose store has a retention.
pub(crate) fn start(state: &Shared) {
    for team in state.teams.values() {
        let Some(keep) = team
            .config
            .spec()
            .checkpoint
            .as_ref()
            .and_then(|c| c.retention.as_ref())
            .map(|r| r.to_runtime())
        else {
            continue;
        };
        if keep.keeps_all() {
            continue;
        }
        let shortest = [keep.runs, keep.sessions].into_iter().flatten().min();
        let pause = shortest.map_or(MAX_PAUSE, |d| (d / 10).clamp(MIN_PAUSE, MAX_PAUSE));
        let (name, store) = (team.name.clone(), team.store.clone());
        let board = team.board.clone();
        // The board's records, events and schedule ticks go with the runs
        // (at the runs' age; an hour at least, so a tick is never claimed
        // twice; a week when only a checkpoint count is set).
        let board_age = keep
            .runs
            .unwrap_or(BOARD_AGE)
            .max(Duration::from_secs(3600));
        tokio::spawn(async move {
            loop {
                let pass = troupe::history::prune(
                    store.checkpoints.as_ref(),
                    store.threads.as_ref(),
                    &keep,
                    SystemTime::now(),
                    false,
                )
                .await;
                match pass {
                    Ok(p) if !p.is_empty() => say(&format!(
                        "troupe serve: `{name}`: retention deleted {} finished run(s), {} checkpoint(s), {} session(s)",
                        p.runs.len(),
                        p.checkpoints,
                        p.sessions.len()
                    )),
                    Ok(_) => {}
                    Err(e) => say(&format!(
                        "troupe serve: `{name}`: retention could not prune the store: {e}"
                    )),
                }
                if let Some(board) = &board {
                    match board.shared.prune(board_age).await {
                        Ok((0, 0)) => {}
                        Ok((runs, ticks)) => say(&format!(
                            "troupe serve: `{name}`: retention deleted {runs} run record(s) with their events and {ticks} schedule tick(s)"
                        )),
                        Err(e) => say(&format!(
                            "troupe serve: `{name}`: retention could not prune the runs board: {e}"
                        )),
                    }
                }
                tokio::time::sleep(pause).await;
            }
        });
    }
}
