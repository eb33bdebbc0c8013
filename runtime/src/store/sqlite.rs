//! [`SqliteStore`]: checkpoints and conversations in one SQLite database.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::chain::{keep_bases_before_delete, keep_bases_before_prune};
use super::checkpoint::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};
use super::durability::Durability;
use super::error::StoreError;
use super::format::{decode_thread, encode_thread};
use super::key::{check_conversation_id, check_run_id};
use super::traits::{CheckpointStore, ThreadStore};
use super::unix_time::{from_unix, to_unix};
use crate::thread::Thread;

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

const META_COLUMNS: &str = "run_id, id, parent, created_secs, created_nanos, superstep, \
                            topology_hash, format_version, checksum, length(payload)";

/// A store in one SQLite database file (or in memory).
///
/// The database runs in WAL mode, so readers do not block the writer and
/// other processes may read it while a run writes. The connection is shared
/// behind a mutex and used from tokio's blocking pool, never on the async
/// threads. Payloads and thread records are checksummed: a row damaged
/// outside this store is reported as [`StoreError::Corrupt`].
///
/// Needs the `sqlite` feature (on by default).
///
/// Durability ([`Durability`]): by default `synchronous=NORMAL` — a commit
/// is in the WAL file, handed to the OS, when `save` returns (survives the
/// process being killed; the WAL is flushed at checkpoints of the WAL, so
/// power loss may lose the last commits); with [`Durability::Fsync`]
/// `synchronous=FULL` flushes the WAL on every commit. A delta's chain
/// loads in one query ([`CheckpointStore::chain`]).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    db: Arc<str>,
    durability: Durability,
}

fn sql_error(db: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Sqlite {
        db: db.to_string(),
        source: Box::new(e),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) a database file and its tables.
    ///
    /// Opening is blocking I/O; call this at setup.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = path.display().to_string();
        let conn = Connection::open(path).map_err(sql_error(&db))?;
        Self::init(conn, db)
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
        conn.busy_timeout(Duration::from_secs(5)).map_err(&err)?;
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
        drop(err);
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            db: Arc::from(db),
            durability: Durability::Process,
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

    /// The database file (or `:memory:`).
    pub fn db(&self) -> &str {
        &self.db
    }

    /// Runs `f` with the connection on the blocking pool.
    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held cannot leave the database half
            // written (SQLite rolls back unfinished transactions), so a
            // poisoned lock is still a good connection.
            let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn, &db)
        })
        .await?
    }
}

/// Names a row in errors.
fn row_what(db: &str, run_id: &str, id: &str) -> String {
    format!("checkpoint {id} of run '{run_id}' in SQLite database '{db}'")
}

/// The raw columns of [`META_COLUMNS`], before validation.
struct MetaRow {
    run_id: String,
    id: String,
    parent: Option<String>,
    created: (i64, i64),
    superstep: i64,
    topology_hash: i64,
    format_version: i64,
    checksum: i64,
    payload_len: i64,
}

impl MetaRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(MetaRow {
            run_id: r.get(0)?,
            id: r.get(1)?,
            parent: r.get(2)?,
            created: (r.get(3)?, r.get(4)?),
            superstep: r.get(5)?,
            topology_hash: r.get(6)?,
            format_version: r.get(7)?,
            checksum: r.get(8)?,
            payload_len: r.get(9)?,
        })
    }

    /// Validates the columns; a bad value is a [`StoreError::Corrupt`]
    /// naming the row.
    fn into_meta(self, db: &str) -> Result<CheckpointMeta, StoreError> {
        let what = || row_what(db, &self.run_id, &self.id);
        let bad = |field: &str| StoreError::corrupt(what(), format!("bad {field} column"));
        let id: CheckpointId = self.id.parse().map_err(|_| bad("id"))?;
        let parent = match &self.parent {
            Some(p) => Some(p.parse().map_err(|_| bad("parent"))?),
            None => None,
        };
        Ok(CheckpointMeta {
            id,
            parent,
            created_at: from_unix(self.created.0, self.created.1).ok_or_else(|| bad("created"))?,
            superstep: self.superstep as u64,
            topology_hash: self.topology_hash as u64,
            format_version: u32::try_from(self.format_version)
                .map_err(|_| bad("format_version"))?,
            checksum: self.checksum as u64,
            payload_len: u64::try_from(self.payload_len).map_err(|_| bad("payload"))?,
            run_id: self.run_id,
        })
    }
}

/// Reads one full checkpoint (metadata columns, then the payload) and
/// verifies it.
fn read_checkpoint(
    conn: &Connection,
    db: &str,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Option<Checkpoint>, StoreError> {
    let row = conn
        .query_row(sql, params, |r| {
            Ok((MetaRow::read(r)?, r.get::<_, Vec<u8>>(10)?))
        })
        .optional()
        .map_err(sql_error(db))?;
    let Some((meta, payload)) = row else {
        return Ok(None);
    };
    let meta = meta.into_meta(db)?;
    let what = row_what(db, &meta.run_id, &meta.id.to_string());
    let cp = Checkpoint::from_parts(meta, payload);
    cp.verify()
        .map_err(|e| StoreError::corrupt(what, e.to_string()))?;
    Ok(Some(cp))
}

#[async_trait]
impl CheckpointStore for SqliteStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&checkpoint.run_id)?;
        let meta = checkpoint.meta();
        // The blocking task needs its own copy of the payload.
        let payload = checkpoint.payload.clone();
        self.with_conn(move |conn, db| {
            let (secs, nanos) = to_unix(meta.created_at);
            let mut stmt = conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO checkpoints (run_id, id, parent, created_secs, \
                     created_nanos, superstep, topology_hash, format_version, checksum, payload) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(sql_error(db))?;
            stmt.execute(params![
                meta.run_id,
                meta.id.to_string(),
                meta.parent.map(|p| p.to_string()),
                secs,
                nanos,
                meta.superstep as i64,
                meta.topology_hash as i64,
                meta.format_version,
                meta.checksum as i64,
                payload,
            ])
            .map_err(sql_error(db))?;
            Ok(())
        })
        .await
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

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.with_conn(|conn, db| {
            let err = sql_error(db);
            // BINARY collation compares UTF-8 bytes: the same order as Rust.
            let mut stmt = conn
                .prepare_cached("SELECT DISTINCT run_id FROM checkpoints ORDER BY run_id")
                .map_err(&err)?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(&err)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(&err)
        })
        .await
    }
}

#[async_trait]
impl ThreadStore for SqliteStore {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        check_conversation_id(conversation)?;
        let conversation = conversation.to_string();
        self.with_conn(move |conn, db| {
            let record: Option<Vec<u8>> = conn
                .query_row(
                    "SELECT record FROM threads WHERE conversation = ?1",
                    params![conversation],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql_error(db))?;
            record
                .map(|r| {
                    decode_thread(
                        &r,
                        &format!("conversation '{conversation}' in SQLite database '{db}'"),
                    )
                })
                .transpose()
        })
        .await
    }

    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        check_conversation_id(conversation)?;
        // Encoded here, not in the blocking task, so the thread is not cloned.
        let record = encode_thread(thread, conversation)?;
        let conversation = conversation.to_string();
        let now = to_unix(SystemTime::now()).0;
        self.with_conn(move |conn, db| {
            conn.execute(
                "INSERT OR REPLACE INTO threads (conversation, record, updated_secs) \
                 VALUES (?1, ?2, ?3)",
                params![conversation, record, now],
            )
            .map_err(sql_error(db))?;
            Ok(())
        })
        .await
    }

    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        check_conversation_id(conversation)?;
        let conversation = conversation.to_string();
        self.with_conn(move |conn, db| {
            let n = conn
                .execute(
                    "DELETE FROM threads WHERE conversation = ?1",
                    params![conversation],
                )
                .map_err(sql_error(db))?;
            Ok(n > 0)
        })
        .await
    }

    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        self.with_conn(|conn, db| {
            let err = sql_error(db);
            let mut stmt = conn
                .prepare_cached("SELECT conversation FROM threads ORDER BY conversation")
                .map_err(&err)?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(&err)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(&err)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
