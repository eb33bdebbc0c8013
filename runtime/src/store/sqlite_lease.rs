//! [`SqliteStore`]'s run leases: one row per held run in `run_leases`,
//! its heartbeat renewed every [`HEARTBEAT`] while the lease is held.
//!
//! A row is taken over when its heartbeat is older than [`STALE_AFTER`]
//! (the holder hung, or its machine went away), or at once when its holder
//! is a process of this host that has ended (`kill -9` leaves the row
//! behind). Taking a lease is one `BEGIN IMMEDIATE` transaction: read the
//! row, refuse or replace it, so two processes never both take it. It is
//! made on the calling thread when the connection is free and no other
//! process holds the database's lock (a few small writes into the WAL),
//! else on the blocking pool, where it may wait for that lock. Every
//! row carries a token of its own, so a holder whose lease was taken over
//! neither renews nor deletes its successor's. A lease given back has its
//! row deleted by the store's next lease taken, in that one's commit, or
//! within a few milliseconds (`sqlite_release`).
//!
//! The table is created when the first lease is taken; databases written
//! before it keep their schema version (a reader that does not know the
//! table ignores it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::error::StoreError;
use super::key::check_run_id;
use super::lease::{
    HEARTBEAT, LeaseError, LeaseHolder, RunLease, RunLeases, STALE_AFTER, from_unix_secs, unix_secs,
};
use super::sqlite::SqliteStore;
use super::sqlite_gate::Gate;
use super::sqlite_release::{RELEASE_AFTER, Releases};
use super::sqlite_rows::sql_error;

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS run_leases (
    run_id     TEXT    NOT NULL PRIMARY KEY,
    token      TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    host       TEXT    NOT NULL,
    since_secs INTEGER NOT NULL,
    beat_secs  INTEGER NOT NULL
);
";

#[async_trait]
impl RunLeases for SqliteStore {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        check_run_id(run_id)?;
        let (conn, db) = self.shared_connection();
        let holder = LeaseHolder::this_process();
        let lease = Row {
            conn,
            db,
            gate: self.gate().clone(),
            releases: self.releases().clone(),
            run_id: run_id.to_string(),
            token: new_token(),
        };
        // On this thread when nothing makes it wait, else on the pool.
        let taken = match self.write_here(0, |conn| lease.take_on(conn, &holder)) {
            Some(taken) => taken.map_err(LeaseError::from).and_then(|held| held),
            None => {
                let lease = lease.clone();
                let holder = holder.clone();
                let gate = lease.gate.clone();
                gate.run(move || lease.take(&holder))
                    .await
                    .map_err(StoreError::from)?
            }
        };
        taken?;
        let beats = {
            let lease = lease.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(HEARTBEAT);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let beat = lease.clone();
                    // A beat that fails is retried at the next tick; the
                    // lease stays taken until STALE_AFTER passes without one.
                    let gate = beat.gate.clone();
                    let beat = gate.run(move || beat.beat()).await;
                    if matches!(beat, Ok(Ok(false))) {
                        tracing::warn!(
                            run_id = %lease.run_id,
                            db = %lease.db,
                            "the lease on the run was taken over (its heartbeat stopped for longer than {}s): another process may run it too",
                            STALE_AFTER.as_secs()
                        );
                        return;
                    }
                }
            })
        };
        Ok(RunLease::new(run_id, holder, Held { row: lease, beats }))
    }
}

/// A lease row of this process.
#[derive(Clone)]
struct Row {
    conn: Arc<Mutex<Connection>>,
    db: Arc<str>,
    /// The store's queue for its connection.
    gate: Gate,
    /// The store's leases given back, rows still to delete.
    releases: Arc<Releases>,
    run_id: String,
    token: String,
}

impl Row {
    /// Takes the row for `holder` unless a live holder has it.
    fn take(&self, holder: &LeaseHolder) -> Result<(), LeaseError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.take_on(&mut conn, holder)
            .map_err(sql_error(&self.db))?
    }

    /// Takes the row in one `BEGIN IMMEDIATE` transaction on `conn`: the
    /// outer error is SQLite's, the inner a live holder's.
    fn take_on(
        &self,
        conn: &mut Connection,
        holder: &LeaseHolder,
    ) -> rusqlite::Result<Result<(), LeaseError>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached(TABLE.trim())?.execute([])?;
        // The leases this store gave back go in this commit (this run's
        // own, given back a moment ago, among them).
        let released = self.releases.delete_on(&tx)?;
        let taken = self.take_in(&tx, holder);
        match taken.and_then(|held| tx.commit().map(|()| held)) {
            Ok(held) => Ok(held),
            Err(e) => {
                self.releases.restore(released);
                Err(e)
            }
        }
    }

    /// Reads the row and, unless a live holder has it, writes ours in
    /// transaction `tx` (not committed).
    fn take_in(
        &self,
        tx: &Connection,
        holder: &LeaseHolder,
    ) -> rusqlite::Result<Result<(), LeaseError>> {
        let row = tx
            .prepare_cached(
                "SELECT pid, host, since_secs, beat_secs FROM run_leases WHERE run_id = ?1",
            )?
            .query_row([&self.run_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .optional()?;
        let now = unix_secs(SystemTime::now());
        if let Some((pid, host, since, beat)) = row {
            let other = LeaseHolder {
                pid: u32::try_from(pid).unwrap_or(0),
                host,
                since: from_unix_secs(since),
            };
            let stale = now.saturating_sub(beat) > secs(STALE_AFTER);
            if !stale && !other.is_dead_here() {
                return Ok(Err(LeaseError::Held {
                    run_id: self.run_id.clone(),
                    holder: Some(other),
                }));
            }
        }
        tx.prepare_cached(
            "INSERT OR REPLACE INTO run_leases (run_id, token, pid, host, since_secs, beat_secs) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            self.run_id,
            self.token,
            i64::from(holder.pid),
            holder.host,
            unix_secs(holder.since),
            now
        ])?;
        Ok(Ok(()))
    }

    /// Renews the heartbeat (of this row only: a successor's is not ours);
    /// `false` when the row is no longer this lease's (taken over).
    fn beat(&self) -> Result<bool, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let renewed = conn
            .prepare_cached("UPDATE run_leases SET beat_secs = ?1 WHERE run_id = ?2 AND token = ?3")
            .and_then(|mut s| {
                s.execute(params![
                    unix_secs(SystemTime::now()),
                    self.run_id,
                    self.token
                ])
            })
            .map_err(sql_error(&self.db))?;
        Ok(renewed == 1)
    }

    /// Deletes the rows of the leases the store gave back.
    fn release_given_back(&self) -> Result<(), StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.releases
            .delete_on(&conn)
            .map(drop)
            .map_err(sql_error(&self.db))
    }

    /// Deletes the row (if it is still this one).
    fn release(&self) -> Result<(), StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.prepare_cached("DELETE FROM run_leases WHERE run_id = ?1 AND token = ?2")
            .and_then(|mut s| s.execute(params![self.run_id, self.token]))
            .map_err(sql_error(&self.db))?;
        Ok(())
    }
}

/// A held lease: stops the heartbeat and deletes the row when dropped.
struct Held {
    row: Row,
    beats: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.beats.abort();
        // Best effort: a row left behind names this process, which is
        // then dead (or its heartbeat stale), so it is taken over.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let _ = self.row.release();
            return;
        };
        // Deleted with the next lease taken, or soon (`sqlite_release`).
        let row = &self.row;
        if row.releases.give_back(&row.run_id, &row.token) {
            let flush = Flush(Some(row.clone()));
            runtime.spawn(async move {
                tokio::time::sleep(RELEASE_AFTER).await;
                flush.run().await;
            });
        }
    }
}

/// Deletes the rows of the leases its store gave back: on the blocking
/// pool once [`RELEASE_AFTER`] has passed ([`Flush::run`]), or wherever it
/// is dropped before that (its task dropped as the runtime shuts down), so
/// none is left behind by a process that ends normally.
struct Flush(Option<Row>);

impl Flush {
    async fn run(mut self) {
        let Some(row) = self.0.take() else {
            return;
        };
        row.releases.unschedule();
        // Most often a lease taken meanwhile deleted them: the connection
        // is then left to the saves.
        if row.releases.is_empty() {
            return;
        }
        let gate = row.gate.clone();
        self.0 = Some(row);
        let _ = gate.run(move || drop(self)).await;
    }
}

impl Drop for Flush {
    fn drop(&mut self) {
        if let Some(row) = self.0.take() {
            row.releases.unschedule();
            let _ = row.release_given_back();
        }
    }
}

fn secs(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// A token no other lease of any process has: pid, time and a counter.
fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn holder_row(store: &SqliteStore, run_id: &str) -> Option<(i64, String)> {
        let (conn, _) = store.shared_connection();
        let conn = conn.lock().unwrap();
        conn.query_row(
            "SELECT pid, token FROM run_leases WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .unwrap()
    }

    /// Waits (up to 5 s, for a loaded machine) until the lease row of
    /// `run_id` is gone.
    async fn deleted_soon(store: &SqliteStore, run_id: &str) {
        let given_back = Instant::now();
        while holder_row(store, run_id).is_some() {
            assert!(
                given_back.elapsed() < Duration::from_secs(5),
                "the row of {run_id}'s lease, given back, was never deleted"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn one_holder_per_run_and_a_dead_holder_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = SqliteStore::open(&path).unwrap();
        let other = SqliteStore::open(&path).unwrap();
        let lease = store.acquire("run-1").await.unwrap();
        let err = other.acquire("run-1").await.unwrap_err();
        assert!(
            matches!(&err, LeaseError::Held { holder: Some(h), .. } if h.pid == std::process::id()),
            "{err}"
        );
        // Given back: the row is deleted soon after (no lease is taken
        // meanwhile), and then another store takes the run.
        drop(lease);
        deleted_soon(&store, "run-1").await;
        let _taken = other.acquire("run-1").await.unwrap();

        // A row left by a process that ended is taken over at once.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        {
            let (conn, _) = store.shared_connection();
            let conn = conn.lock().unwrap();
            conn.execute(
                "INSERT INTO run_leases VALUES ('run-2', 'old', ?1, ?2, 0, ?3)",
                params![
                    i64::from(dead),
                    crate::store::lease::this_host(),
                    unix_secs(SystemTime::now())
                ],
            )
            .unwrap();
            // A live holder elsewhere whose heartbeat stopped long ago.
            conn.execute(
                "INSERT INTO run_leases VALUES ('run-3', 'old', 1, 'elsewhere', 0, 0)",
                [],
            )
            .unwrap();
            // And one whose heartbeat is fresh.
            conn.execute(
                "INSERT INTO run_leases VALUES ('run-4', 'old', 1, 'elsewhere', 0, ?1)",
                [unix_secs(SystemTime::now())],
            )
            .unwrap();
        }
        // A lease whose row was taken over renews nothing.
        let stale = Row {
            conn: store.shared_connection().0,
            db: store.shared_connection().1,
            gate: store.gate().clone(),
            releases: store.releases().clone(),
            run_id: "run-1".into(),
            token: "not-the-holder".into(),
        };
        assert!(!stale.beat().unwrap());
        let two = store.acquire("run-2").await.unwrap();
        assert_eq!(
            holder_row(&store, "run-2").unwrap().0,
            i64::from(std::process::id())
        );
        let _three = store.acquire("run-3").await.unwrap();
        let err = store.acquire("run-4").await.unwrap_err();
        assert!(err.to_string().contains("pid 1 on elsewhere"), "{err}");
        drop(two);
    }

    #[tokio::test]
    async fn a_lease_given_back_is_deleted_by_the_next_lease_taken() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("runs.db")).unwrap();
        let first = store.acquire("run-1").await.unwrap();
        let token = holder_row(&store, "run-1").unwrap().1;
        drop(first);
        // Until it is deleted, the row is there, but the run is free to
        // this store: taking it again replaces the row (no `Held`).
        assert_eq!(holder_row(&store, "run-1").unwrap().1, token);
        let again = store.acquire("run-1").await.unwrap();
        let retaken = holder_row(&store, "run-1").unwrap().1;
        assert_ne!(retaken, token);
        // Another run's lease taken deletes the rows given back in its
        // own commit; the task that would have deleted them finds none.
        drop(again);
        let _two = store.acquire("run-2").await.unwrap();
        assert_eq!(holder_row(&store, "run-1"), None);
        tokio::time::sleep(RELEASE_AFTER * 4).await;
        assert!(
            holder_row(&store, "run-2").is_some(),
            "the other lease stays"
        );
    }

    #[test]
    fn a_lease_given_back_as_its_runtime_ends_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("runs.db")).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // The task that deletes the row has not run when the runtime
        // ends (a CLI run returning): its drop deletes it.
        runtime.block_on(async { drop(store.acquire("run-1").await.unwrap()) });
        assert!(holder_row(&store, "run-1").is_some());
        drop(runtime);
        assert_eq!(holder_row(&store, "run-1"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_waits_while_another_process_holds_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = SqliteStore::open(&path).unwrap();
        // Another writer holds the database's write lock: the lease is
        // not taken on the calling thread, nor refused as busy, but waits
        // on the blocking pool.
        let blocker = Connection::open(&path).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE;").unwrap();
        let waiting = {
            let store = store.clone();
            tokio::spawn(async move { store.acquire("run-1").await.map(drop) })
        };
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            !waiting.is_finished(),
            "the lease did not wait for the lock"
        );
        blocker.execute_batch("COMMIT;").unwrap();
        waiting.await.unwrap().unwrap();
        deleted_soon(&store, "run-1").await;
    }
}
