//! Runs whose worker died, taken over: with a PostgreSQL store shared by
//! several `troupe serve` processes, every worker looks every
//! [`troupe::store::HEARTBEAT`] for the leases their holders left behind
//! ([`RunLeases::abandoned`](troupe::store::RunLeases::abandoned): a dead
//! process of this host at once; any holder whose heartbeat is
//! [`troupe::store::STALE_AFTER`] old) and takes each it can — one worker
//! wins each lease — then carries the run on (`takeover_run.rs`). A run
//! that ended in any way, failed included, gave its lease back, so it is
//! never taken over. Such a run is listed by the worker that took it over
//! (`GET /runs/{id}`) under its own id.

use troupe::config::StoreKind;
use troupe::store::HEARTBEAT;

use super::lease_note::Note;
use super::say;
use super::state::Shared;
use super::takeover_run::carry_on;

/// Starts a takeover loop for every team whose store is PostgreSQL.
pub(crate) fn start(state: &Shared) {
    for team in state.teams.values() {
        if team.store.kind != StoreKind::Postgres {
            continue;
        }
        let (name, state) = (team.name.clone(), state.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                pass(&state, &name).await;
            }
        });
    }
}

/// One look for runs to take over in team `name`'s store.
async fn pass(state: &Shared, name: &str) {
    let Ok(team) = state.team(Some(name)) else {
        return;
    };
    let left = match team.store.leases.abandoned().await {
        Ok(l) => l,
        Err(e) => {
            say(&format!(
                "troupe serve: `{name}`: cannot look for runs to take over: {e}"
            ));
            return;
        }
    };
    for abandoned in left {
        // A lease without a served run's note (a `troupe run`'s) is
        // resumed by its own command; another team's by its servers.
        let Some(text) = abandoned.note.as_deref() else {
            continue;
        };
        let Some(note) = Note::decode(text) else {
            continue;
        };
        if note.team != name || state.runs.get(&abandoned.run_id).is_ok() {
            continue;
        }
        // The slot first: a lease taken and given back for want of one
        // would no longer be left behind.
        let Ok(slot) = state.limits.run_slot() else {
            return;
        };
        // Taken by another worker first: not ours.
        let Ok(lease) = team.store.leases.take_over(&abandoned.run_id, text).await else {
            continue;
        };
        let Some(run) = state
            .runs
            .adopt(&abandoned.run_id, name, &note.task, note.session.clone())
        else {
            continue;
        };
        say(&format!(
            "troupe serve: `{name}`: took over run `{}` (its worker, {}, stopped)",
            run.id, abandoned.holder
        ));
        super::board::adopted(state, &run).await;
        let state = state.clone();
        tokio::spawn(async move {
            let result = match state.team(Some(&run.team)) {
                Ok(team) => {
                    let result = carry_on(team, &run, &note).await;
                    super::drive::record_failure(team, &run, &result).await;
                    result
                }
                Err(e) => Err(e.message),
            };
            drop(lease);
            run.finish(result);
            drop(slot);
        });
    }
}
