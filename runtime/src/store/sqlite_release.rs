//! Run leases given back but whose rows are not deleted yet.
//!
//! Deleting a lease's row is a commit of its own, as taking it is. A
//! served session's turns each take their run's lease and give it back,
//! so a turn paid for two commits besides its checkpoints. A lease given
//! back is now queued here, and its row deleted by the store's next lease
//! taken, in that one's transaction, or within [`RELEASE_AFTER`] by a
//! task of its own when no lease is taken meanwhile.
//!
//! A run whose lease was given back is free at once to this store (its
//! next take deletes the row first). Another process sees the row until
//! it is deleted: a holder that is alive, for at most [`RELEASE_AFTER`];
//! a process that ended before then left a row naming a dead pid, which
//! is taken over at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::{Connection, params};

/// How long a given-back lease's row waits for the next lease taken
/// before a task deletes it.
pub(super) const RELEASE_AFTER: Duration = Duration::from_millis(5);

/// The leases of a store given back whose rows are still there: run id
/// and token.
#[derive(Debug, Default)]
pub(super) struct Releases {
    rows: Mutex<Vec<(String, String)>>,
    /// A task that will delete them is scheduled.
    scheduled: AtomicBool,
}

impl Releases {
    /// Queues the row of run `run_id`'s lease `token`; `true` when no task
    /// is scheduled to delete the queued rows yet (the caller schedules
    /// one).
    pub(super) fn give_back(&self, run_id: &str, token: &str) -> bool {
        self.lock().push((run_id.to_string(), token.to_string()));
        !self.scheduled.swap(true, Ordering::AcqRel)
    }

    /// Deletes the queued rows on `conn` (each only if it is still that
    /// lease's). Inside the caller's transaction when it has one: if that
    /// one is rolled back, the rows are queued again with
    /// [`Releases::restore`].
    pub(super) fn delete_on(&self, conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
        let rows = std::mem::take(&mut *self.lock());
        for (run_id, token) in &rows {
            let deleted = conn
                .prepare_cached("DELETE FROM run_leases WHERE run_id = ?1 AND token = ?2")
                .and_then(|mut s| s.execute(params![run_id, token]));
            if let Err(e) = deleted {
                // Deleting one again later deletes nothing.
                self.restore(rows);
                return Err(e);
            }
        }
        Ok(rows)
    }

    /// Queues again rows [`Releases::delete_on`] took whose deletion was
    /// not committed.
    pub(super) fn restore(&self, rows: Vec<(String, String)>) {
        if !rows.is_empty() {
            self.lock().extend(rows);
        }
    }

    /// Whether no row is queued (a lease taken meanwhile deleted them).
    pub(super) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The scheduled task starts: rows queued from now on schedule another.
    pub(super) fn unschedule(&self) {
        self.scheduled.store(false, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
}
