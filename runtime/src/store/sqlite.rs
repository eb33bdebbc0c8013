//! [`SqliteStore`]: checkpoints and conversations in one SQLite database.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, params};

use super::chain::{keep_bases_before_delete, keep_bases_before_prune};
use super::durability::Durability;
use super::error::StoreError;
use super::key::check_run_id;
use super::lineage::Lineage;
use super::save_errors::SaveErrors;
use super::sqlite_gate::Gate;
use super::sqlite_lineage;
use super::sqlite_release::Releases;
use super::sqlite_rows::{
    BUSY_TIMEOUT, META_COLUMNS, MetaRow, insert, insert_row, read_checkpoint, row_what, sql_error,
};
use super::sqlite_wal::{WalCopies, copy};
use super::thread_cache::ThreadCache;
use super::traits::CheckpointStore;
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};

/// Version of the tables below, kept in SQLite's `user_version`.
const SCHEMA_VERSION: u32 = 1;

// Rowid tables (not WITHOUT ROWID): payloads are large, and SQLite keeps
// large rows better out of the key's b-tree. Ids are 32 hex digits, so text
// order is creation order. u64 values are stored bit for bit as SQLite's
// signed 64-bit integers.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id         TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    parent         TEXT,
    created_secs   INTEGER NOT NULL,
    created_nanos  INTEGER NOT NULL,
    superstep      INTEGER NOT NULL,
    topology_hash  INTEGER NOT NULL,
    format_version INTEGER NOT NULL,
    checksum       INTEGER NOT NULL,
    payload        BLOB    NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS threads (
    conversation TEXT    NOT NULL PRIMARY KEY,
    record       BLOB    NOT NULL,
    updated_secs INTEGER NOT NULL
);
";

/// A store in one SQLite database file (or in memory).
///
/// The database runs in WAL mode, so readers do not block the writer and
/// other processes may read it while a run writes. The connection is shared
/// behind a mutex and used from tokio's blocking pool, one operation on
/// the pool at a time (the others wait their turn as futures, not parked
/// threads), never on the async threads (but for small commits, below).
/// Payloads and thread records are checksummed: a row damaged
/// outside this store is reported as [`StoreError::Corrupt`].
///
/// Needs the `sqlite` feature (on by default).
///
/// Durability ([`Durability`]): by default `synchronous=NORMAL` — a commit
/// is in the WAL file, handed to the OS, when `save` returns (survives the
/// process being killed; the WAL is flushed at checkpoints of the WAL, so
/// power loss may lose the last commits); with [`Durability::Fsync`]
/// `synchronous=FULL` flushes the WAL on every commit. At `NORMAL`, a
/// checkpoint or a conversation of up to 64 KiB, and a run's lease, are
/// committed on the calling thread when the connection is free and no
/// other process holds the lock (a write into the WAL, nothing waited
/// for); otherwise on the blocking pool. The last 64 conversations loaded
/// or saved are kept decoded, and a load is answered from them while no
/// other connection has written to the database (`PRAGMA data_version`). Every
/// ~4 MiB committed, the WAL is copied into the database on the blocking
/// pool when the saves pause (a run waiting on its model, between runs),
/// or at once if they have not by the time the WAL holds 64 MiB: first
/// through a connection of its own, then what was added meanwhile through
/// the store's connection, so the WAL is whole in the database and SQLite
/// starts it over (SQLite's automatic WAL checkpoint is off: it would run,
/// and flush, inside a save). A delta's chain loads in one query
/// ([`CheckpointStore::chain`]).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    db: Arc<str>,
    durability: Durability,
    save_errors: SaveErrors,
    /// What the saves committed, for the WAL's copies into the database.
    wal: Arc<WalCopies>,
    /// The database file (`None` in memory), for the WAL's copies.
    path: Option<Arc<Path>>,
    /// The queue of operations for the connection: one on the blocking
    /// pool at a time (`sqlite_gate`).
    gate: Gate,
    /// The conversations read or written last, decoded
    /// (`thread_cache`).
    threads: Arc<ThreadCache>,
    /// Run leases given back whose rows are still to delete
    /// (`sqlite_release`).
    releases: Arc<Releases>,
}

impl SqliteStore {
    /// Opens (creating if needed) a database file and its tables.
    ///
    /// Opening is blocking I/O; call this at setup.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = path.display().to_string();
        let conn = Connection::open(path).map_err(sql_error(&db))?;
        let mut store = Self::init(conn, db)?;
        store.path = Some(Arc::from(path));
        Ok(store)
    }

    /// A database in memory, gone when the last clone is dropped.
    pub fn in_memory() -> Result<Self, StoreError> {
        let db = ":memory:".to_string();
        let conn = Connection::open_in_memory().map_err(sql_error(&db))?;
        Self::init(conn, db)
    }

    fn init(conn: Connection, db: String) -> Result<Self, StoreError> {
        let err = sql_error(&db);
        // Another process holding the write lock is waited for, not failed.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&err)?;
        // `journal_mode` answers with the mode it set (an in-memory
        // database stays in `memory` mode, which is fine).
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(&err)?;
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(&err)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::UnsupportedVersion {
                what: format!("SQLite database '{db}'"),
                found: version,
                expected: SCHEMA_VERSION,
            });
        }
        conn.execute_batch(SCHEMA).map_err(&err)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(&err)?;
        // Every statement a run or a served turn makes is prepared once
        // (`prepare_cached`); rusqlite keeps 16 by default.
        conn.set_prepared_statement_cache_capacity(STATEMENTS);
        // Saves copy the WAL into the database themselves (`wrote`).
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(&err)?;
        drop(err);
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            db: Arc::from(db),
            durability: Durability::Process,
            save_errors: SaveErrors::Fail,
            wal: Arc::new(WalCopies::new()),
            path: None,
            gate: Gate::new(),
            threads: Arc::default(),
            releases: Arc::default(),
        })
    }

    /// The same database with durability `durability`: `Fsync` sets
    /// `synchronous=FULL`, the others `NORMAL` (`Exit` also makes runs
    /// checkpoint only when they stop). Blocking (one pragma); call this
    /// at setup.
    pub fn with_durability(mut self, durability: Durability) -> Result<Self, StoreError> {
        let level = if durability == Durability::Fsync {
            "FULL"
        } else {
            "NORMAL"
        };
        {
            let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            conn.pragma_update(None, "synchronous", level)
                .map_err(sql_error(&self.db))?;
        }
        self.durability = durability;
        Ok(self)
    }

    /// The same store with `save_errors` deciding what a run does when a
    /// checkpoint cannot be saved (see [`SaveErrors`]).
    pub fn with_save_errors(mut self, save_errors: SaveErrors) -> Self {
        self.save_errors = save_errors;
        self
    }

    /// The database file (or `:memory:`).
    pub fn db(&self) -> &str {
        &self.db
    }

    /// The connection and the database's name, for the run leases
    /// (`sqlite_lease.rs`), which keep their rows in the same database.
    pub(super) fn shared_connection(&self) -> (Arc<Mutex<Connection>>, Arc<str>) {
        (self.conn.clone(), self.db.clone())
    }

    /// The leases given back whose rows are still to delete.
    pub(super) fn releases(&self) -> &Arc<Releases> {
        &self.releases
    }

    /// The queue in front of the connection, for the leases and the
    /// result cache, which use it too.
    pub(super) fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The one text column `query` selects, every row.
    pub(super) async fn strings(&self, query: &'static str) -> Result<Vec<String>, StoreError> {
        self.with_conn(move |conn, db| {
            let err = sql_error(db);
            let mut stmt = conn.prepare_cached(query).map_err(&err)?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(&err)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(&err)
        })
        .await
    }

    /// The conversations kept decoded, for `sqlite_threads`.
    pub(super) fn thread_cache(&self) -> &Arc<ThreadCache> {
        &self.threads
    }

    /// Runs `f` with the connection on the blocking pool, after the
    /// operations queued before it.
    pub(super) async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        let db = self.db.clone();
        self.gate
            .run(move || {
                // A panic while the lock was held cannot leave the database half
                // written (SQLite rolls back unfinished transactions), so a
                // poisoned lock is still a good connection.
                let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                f(&mut conn, &db)
            })
            .await?
    }
}

impl SqliteStore {
    /// Saves a small checkpoint at once on the calling thread if nothing
    /// would make it wait (see [`SqliteStore::write_here`]). `None` when it
    /// was not tried or the database was busy: the caller saves on the
    /// blocking pool.
    fn save_here(&self, checkpoint: &Checkpoint) -> Option<Result<(), StoreError>> {
        let bytes = checkpoint.payload.len();
        let saved = self.write_here(bytes, |conn| {
            insert_row(conn, &checkpoint.meta(), &checkpoint.payload)
        })?;
        if saved.is_ok() {
            self.committed(bytes);
        }
        Some(saved)
    }

    /// Runs a small write (`bytes` long) at once on the calling thread if
    /// nothing would make it wait: not [`Durability::Fsync`] (a commit is
    /// then a write into the WAL, no flush), the connection free, the
    /// database not locked by another process (no busy wait here: it is
    /// tried once) and no WAL checkpoint due (those, which flush, run on
    /// the blocking pool). `None` when it was not tried or the database
    /// was busy: the caller writes on the blocking pool.
    pub(super) fn write_here<T>(
        &self,
        bytes: usize,
        write: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, StoreError>> {
        if self.durability == Durability::Fsync || bytes > INLINE_SAVE {
            return None;
        }
        self.here(write)
    }

    /// Runs `f` at once on the calling thread if the connection is free
    /// and the database not locked by another process (tried once: no
    /// busy wait here). `None` when it was not: the caller goes to the
    /// blocking pool.
    pub(super) fn here<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, StoreError>> {
        let mut conn = self.conn.try_lock().ok()?;
        let db = &*self.db;
        let done = conn
            .busy_timeout(Duration::ZERO)
            .and_then(|()| f(&mut conn));
        let restored = conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error(db));
        match done {
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => None,
            Ok(value) => Some(restored.map(|()| value)),
            Err(e) => Some(Err(sql_error(db)(e))),
        }
    }

    /// Counts a commit of `bytes`; when that makes a copy of the WAL into
    /// the database due, starts it (on the blocking pool, made once the
    /// saves pause or the WAL has reached its bound: see `sqlite_wal`).
    pub(super) fn committed(&self, bytes: usize) {
        if self.wal.wrote(bytes) {
            copy(&self.wal, &self.conn, self.path.as_ref());
        }
    }
}

/// How many prepared statements the connection keeps (every one the store
/// makes, with room).
const STATEMENTS: usize = 64;

/// Largest checkpoint `save` commits on the calling thread.
const INLINE_SAVE: usize = 64 * 1024;

#[async_trait]
impl CheckpointStore for SqliteStore {
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        let run_id = run_id.to_string();
        self.with_conn(move |conn, db| sqlite_lineage::load(conn, db, &run_id))
            .await
    }

    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        let (run_id, lineage) = (run_id.to_string(), lineage.clone());
        self.with_conn(move |conn, db| sqlite_lineage::save(conn, db, &run_id, &lineage))
            .await?;
        Ok(true)
    }

    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&checkpoint.run_id)?;
        if let Some(done) = self.save_here(checkpoint) {
            return done;
        }
        let meta = checkpoint.meta();
        // The blocking task needs its own copy of the payload.
        let payload = checkpoint.payload.clone();
        let bytes = payload.len();
        self.with_conn(move |conn, db| insert(conn, db, &meta, &payload))
            .await?;
        self.committed(bytes);
        Ok(())
    }

    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let (run_id, id) = (run_id.to_string(), id.to_string());
        self.with_conn(move |conn, db| {
            read_checkpoint(
                conn,
                db,
                &format!(
                    "SELECT {META_COLUMNS}, payload FROM checkpoints WHERE run_id = ?1 AND id = ?2"
                ),
                params![run_id, id],
            )
        })
        .await
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.with_conn(move |conn, db| {
            read_checkpoint(
                conn,
                db,
                &format!(
                    "SELECT {META_COLUMNS}, payload FROM checkpoints WHERE run_id = ?1 \
                     ORDER BY id DESC LIMIT 1"
                ),
                params![run_id],
            )
        })
        .await
    }

    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.with_conn(move |conn, db| {
            let err = sql_error(db);
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {META_COLUMNS} FROM checkpoints WHERE run_id = ?1 ORDER BY id ASC"
                ))
                .map_err(&err)?;
            let rows = stmt
                .query_map(params![run_id], MetaRow::read)
                .map_err(&err)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row.map_err(&err)?.into_meta(db)?);
            }
            Ok(out)
        })
        .await
    }

    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_delete(self, run_id, id).await?;
        let (run_id, id) = (run_id.to_string(), id.to_string());
        self.with_conn(move |conn, db| {
            let n = conn
                .execute(
                    "DELETE FROM checkpoints WHERE run_id = ?1 AND id = ?2",
                    params![run_id, id],
                )
                .map_err(sql_error(db))?;
            Ok(n > 0)
        })
        .await
    }

    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_prune(self, run_id, keep_last).await?;
        let run_id = run_id.to_string();
        let keep = i64::try_from(keep_last).unwrap_or(i64::MAX);
        self.with_conn(move |conn, db| {
            conn.execute(
                "DELETE FROM checkpoints WHERE run_id = ?1 AND id NOT IN \
                 (SELECT id FROM checkpoints WHERE run_id = ?1 ORDER BY id DESC LIMIT ?2)",
                params![run_id, keep],
            )
            .map_err(sql_error(db))
        })
        .await
    }

    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let (run, target) = (run_id.to_string(), *id);
        self.with_conn(move |conn, db| {
            let err = sql_error(db);
            // Parents are older: every link is at or before the target.
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {META_COLUMNS}, payload FROM checkpoints WHERE run_id = ?1 \
                     AND id <= ?2 ORDER BY id DESC"
                ))
                .map_err(&err)?;
            let mut rows = stmt.query(params![run, target.to_string()]).map_err(&err)?;
            let mut chain = Vec::new();
            let mut want = Some(target);
            while let Some(next) = want {
                let Some(row) = rows.next().map_err(&err)? else {
                    break;
                };
                let meta = MetaRow::read(row).map_err(&err)?.into_meta(db)?;
                if meta.id != next {
                    continue;
                }
                let payload: Vec<u8> = row.get(10).map_err(&err)?;
                let what = row_what(db, &meta.run_id, &meta.id.to_string());
                let cp = Checkpoint::from_parts(meta, payload);
                cp.verify()
                    .map_err(|e| StoreError::corrupt(what, e.to_string()))?;
                want = match cp.kind() {
                    CheckpointKind::Delta => cp.parent,
                    CheckpointKind::Full => None,
                };
                chain.push(cp);
            }
            chain.reverse();
            Ok(chain)
        })
        .await
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    fn save_errors(&self) -> SaveErrors {
        self.save_errors
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.with_conn(|conn, db| {
            // VACUUM rewrites the file without its free pages; the WAL's
            // checkpoint then truncates the WAL it went through.
            conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(sql_error(db))
        })
        .await
    }

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        // BINARY collation compares UTF-8 bytes: the same order as Rust.
        self.strings("SELECT DISTINCT run_id FROM checkpoints ORDER BY run_id")
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ThreadStore;

    #[tokio::test]
    async fn a_damaged_row_is_reported_as_corrupt_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&path).unwrap();
        let cp = Checkpoint::new("run", None, 1, 2, vec![7; 64]);
        store.save(&cp).await.unwrap();
        store
            .with_conn(|c, _| {
                c.execute("UPDATE checkpoints SET payload = zeroblob(64)", [])
                    .unwrap();
                c.execute("INSERT INTO threads VALUES ('bad', x'00112233', 0)", [])
                    .unwrap();
                Ok(())
            })
            .await
            .unwrap();
        let e = store.load("run", &cp.id).await.unwrap_err();
        assert!(e.is_corrupt(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("t.db") && text.contains(&cp.id.to_string()),
            "{text}"
        );
        let e = store.latest("run").await.unwrap_err();
        assert!(e.is_corrupt(), "{e}");
        let e = store.load_thread("bad").await.unwrap_err();
        assert!(e.is_corrupt() && e.to_string().contains("'bad'"), "{e}");
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        {
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "user_version", 99).unwrap();
        }
        let e = SqliteStore::open(&path).unwrap_err();
        assert!(
            matches!(e, StoreError::UnsupportedVersion { found: 99, .. }),
            "{e}"
        );
    }
}
