//! The rows of [`SqliteStore`](super::SqliteStore)'s `checkpoints`
//! table: written, read back and verified.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::StoreError;
use super::unix_time::{from_unix, to_unix};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointMeta};

/// How long a statement waits for another process's lock.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The metadata columns, in the order `MetaRow::read` reads them.
pub(super) const META_COLUMNS: &str = "run_id, id, parent, created_secs, created_nanos, superstep, \
                            topology_hash, format_version, checksum, length(payload)";

pub(super) fn sql_error(db: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Sqlite {
        db: db.to_string(),
        source: Box::new(e),
    }
}

/// Inserts (or replaces) one checkpoint row.
pub(super) fn insert(
    conn: &mut Connection,
    db: &str,
    meta: &CheckpointMeta,
    payload: &[u8],
) -> Result<(), StoreError> {
    insert_row(conn, meta, payload).map_err(sql_error(db))
}

/// [`insert`], with SQLite's error as it is.
pub(super) fn insert_row(
    conn: &mut Connection,
    meta: &CheckpointMeta,
    payload: &[u8],
) -> rusqlite::Result<()> {
    let (secs, nanos) = to_unix(meta.created_at);
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO checkpoints (run_id, id, parent, created_secs, \
             created_nanos, superstep, topology_hash, format_version, checksum, payload) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
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
    ])?;
    Ok(())
}

/// Names a row in errors.
pub(super) fn row_what(db: &str, run_id: &str, id: &str) -> String {
    format!("checkpoint {id} of run '{run_id}' in SQLite database '{db}'")
}

/// The raw columns of [`META_COLUMNS`], before validation.
pub(super) struct MetaRow {
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
    pub(super) fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
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
    pub(super) fn into_meta(self, db: &str) -> Result<CheckpointMeta, StoreError> {
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
pub(super) fn read_checkpoint(
    conn: &Connection,
    db: &str,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Option<Checkpoint>, StoreError> {
    let row = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_row(params, |r| {
                Ok((MetaRow::read(r)?, r.get::<_, Vec<u8>>(10)?))
            })
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
