//! Runs whose worker died, taken over: with a PostgreSQL store shared by
//! several `troupe serve` processes, every worker looks every
//! [`troupe::store::HEARTBEAT`] for runs the store holds as under way (their
//! latest checkpoint taken mid-run) that it does not run itself, and takes
//! the lease of each it can — the lease is free only when its holder died
//! (a dead process of this host at once; any holder whose heartbeat is
//! [`troupe::store::STALE_AFTER`] old) — then carries the run on from its
//! last checkpoint. Such a run is listed by the worker that took it over
//! (`GET /runs/{id}`) under its own id. A session turn taken over ends as a
//! run: its reply is not added to the session (the worker that died was to
//! save it).

use troupe::config::StoreKind;
use troupe::store::HEARTBEAT;

use super::say;
use super::state::Shared;

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
    let runs = match troupe::summarize_runs(team.store.checkpoints.as_ref()).await {
        Ok(r) => r,
        Err(e) => {
            say(&format!(
                "troupe serve: `{name}`: cannot look for runs to take over: {e}"
            ));
            return;
        }
    };
    let orphans = runs.into_iter().filter(|r| {
        r.status.is_none()
            && r.requests.is_empty()
            && r.unreadable.is_none()
            && state.runs.get(&r.run_id).is_err()
    });
    for summary in orphans {
        // Held by a live worker (or a `troupe run`): not ours to take.
        let Ok(lease) = team.store.leases.acquire(&summary.run_id).await else {
            continue;
        };
        let Ok(slot) = state.limits.run_slot() else {
            // Full: the lease goes back, and the next look tries again.
            return;
        };
        let Some(run) = state.runs.adopt(&summary.run_id, name) else {
            continue;
        };
        say(&format!(
            "troupe serve: `{name}`: took over run `{}` from its last checkpoint (superstep {}): its worker stopped",
            run.id, summary.superstep
        ));
        super::board::adopted(state, &run).await;
        let state = state.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            let _lease = lease;
            let result = match state.team(Some(&name)) {
                Ok(team) => team
                    .built
                    .workflow
                    .run_from_checkpoint(team.store.checkpoints.as_ref(), &run.id, None, &run.ctx)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.message),
            };
            run.finish(result);
            drop(slot);
        });
    }
}
