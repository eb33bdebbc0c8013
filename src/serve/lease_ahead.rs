//! A run's lease taken before its request is answered: on a store several
//! workers share, a run the client was told of (its id, 201) is one the
//! store knows of — its lease, noting what the run is, is in the database
//! — so if this worker dies before the run's first checkpoint (even
//! before the run began, waiting its turn in its session), another worker
//! takes the lease over and starts the run again from its note.
//!
//! The lease waits here until the run's stretch takes it (`drive.rs`);
//! a run that ends without one (cancelled before it began) gives it back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use troupe::config::StoreKind;
use troupe::store::RunLease;

use super::error::ApiError;
use super::lease_note::Note;
use super::run::{Run, Status};
use super::start::Start;
use super::state::Shared;

/// The leases taken ahead, by run id.
fn table() -> MutexGuard<'static, HashMap<String, RunLease>> {
    static TABLE: OnceLock<Mutex<HashMap<String, RunLease>>> = OnceLock::new();
    TABLE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Takes `run`'s lease now, when its team's store is shared (PostgreSQL);
/// on failure the run ends failed and the error answers the request.
pub(crate) async fn take(state: &Shared, run: &Arc<Run>, start: &Start) -> Result<(), ApiError> {
    let team = state.team(Some(&run.team))?;
    if team.store.kind != StoreKind::Postgres {
        return Ok(());
    }
    let note = Note::of(run, start).encode();
    let lease = match team.store.leases.acquire_noting(&run.id, &note).await {
        Ok(l) => l,
        Err(e) => {
            let message = format!("cannot record run `{}` in the store: {e}", run.id);
            run.finish(Err(message.clone()));
            return Err(ApiError::internal(message));
        }
    };
    table().insert(run.id.clone(), lease);
    let run = run.clone();
    tokio::spawn(async move {
        let mut changes = run.watch_status();
        loop {
            changes.borrow_and_update();
            let status = run.inner().status();
            if status != Status::Running || changes.changed().await.is_err() {
                break;
            }
        }
        table().remove(&run.id);
    });
    Ok(())
}

/// The lease taken ahead for run `id`, if any (its stretch holds it).
pub(crate) fn claim(id: &str) -> Option<RunLease> {
    table().remove(id)
}
