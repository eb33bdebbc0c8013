//! Each team's store kept to its retention (`checkpoint: {retention: …}`)
//! in the background: at the start, then every tenth of the shortest age
//! it sets (between a minute and an hour; hourly when it sets only a
//! checkpoint count).

use std::time::{Duration, SystemTime};

use super::say;
use super::state::Shared;

/// The shortest pause between two passes.
const MIN_PAUSE: Duration = Duration::from_secs(60);
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
        tokio::spawn(async move {
            loop {
                let pass = troupe::prune(
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
                tokio::time::sleep(pause).await;
            }
        });
    }
}
