//! A forked run's lineage in a [`SqliteStore`](super::SqliteStore): one row
//! of table `run_lineage`, made by the first fork (`CREATE TABLE IF NOT
//! EXISTS`), so a database written before forks existed opens, lists and
//! keeps its schema version as it was; reading one without the table
//! finds no lineage and changes nothing.

use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;
use super::lineage::{Lineage, from_epoch, since_epoch};
use super::sqlite_rows::sql_error;

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS run_lineage (
    run_id       TEXT    NOT NULL PRIMARY KEY,
    parent_run   TEXT    NOT NULL,
    checkpoint   TEXT    NOT NULL,
    forked_secs  INTEGER NOT NULL,
    forked_nanos INTEGER NOT NULL
);
";

/// Keeps `lineage` as run `run_id`'s (replacing one kept before).
pub(super) fn save(
    conn: &mut Connection,
    db: &str,
    run_id: &str,
    lineage: &Lineage,
) -> Result<(), StoreError> {
    let err = sql_error(db);
    conn.prepare_cached(TABLE.trim())
        .and_then(|mut s| s.execute([]))
        .map_err(&err)?;
    let (secs, nanos) = since_epoch(lineage.forked_at);
    let mut insert = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO run_lineage (run_id, parent_run, checkpoint, forked_secs, forked_nanos) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(&err)?;
    insert
        .execute(params![
            run_id,
            lineage.parent_run,
            lineage.checkpoint.to_string(),
            secs as i64,
            nanos
        ])
        .map_err(&err)?;
    Ok(())
}

/// Run `run_id`'s lineage; `None` when it has none (or no run has).
pub(super) fn load(
    conn: &mut Connection,
    db: &str,
    run_id: &str,
) -> Result<Option<Lineage>, StoreError> {
    let err = sql_error(db);
    let exists: Option<i64> = conn
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_lineage'")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .optional()
        .map_err(&err)?;
    if exists.is_none() {
        return Ok(None);
    }
    let row: Option<(String, String, i64, u32)> = conn
        .prepare_cached(
            "SELECT parent_run, checkpoint, forked_secs, forked_nanos FROM run_lineage WHERE run_id = ?1",
        )
        .and_then(|mut s| {
            s.query_row(params![run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
        })
        .optional()
        .map_err(&err)?;
    let Some((parent_run, checkpoint, secs, nanos)) = row else {
        return Ok(None);
    };
    let checkpoint = checkpoint
        .parse()
        .map_err(|e: StoreError| StoreError::Corrupt {
            what: format!("the lineage of run '{run_id}' in SQLite database '{db}'"),
            reason: e.to_string(),
        })?;
    Ok(Some(Lineage {
        parent_run,
        checkpoint,
        forked_at: from_epoch(secs.max(0) as u64, nanos),
    }))
}
