//! The rows of `troupe_checkpoints`: written, read back and verified.

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::super::error::StoreError;
use super::connect::pg_error;
use super::internals::{from_unix, to_unix};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointMeta};

/// The metadata columns, in the order [`meta`] reads them.
pub(super) const META_COLUMNS: &str = "run_id, id, parent, created_secs, created_nanos, superstep, \
     topology_hash, format_version, checksum, octet_length(payload)::bigint";

/// Inserts (or replaces) one checkpoint.
pub(super) const UPSERT: &str = "INSERT INTO troupe_checkpoints (run_id, id, parent, created_secs, \
     created_nanos, superstep, topology_hash, format_version, checksum, payload) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (run_id, id) DO UPDATE SET parent = EXCLUDED.parent, \
     created_secs = EXCLUDED.created_secs, created_nanos = EXCLUDED.created_nanos, \
     superstep = EXCLUDED.superstep, topology_hash = EXCLUDED.topology_hash, \
     format_version = EXCLUDED.format_version, checksum = EXCLUDED.checksum, \
     payload = EXCLUDED.payload";

/// The values of [`UPSERT`] for one checkpoint (u64s stored bit for bit
/// as signed 64-bit integers).
pub(super) struct Values {
    run_id: String,
    id: String,
    parent: Option<String>,
    secs: i64,
    nanos: i64,
    superstep: i64,
    topology_hash: i64,
    format_version: i64,
    checksum: i64,
}

impl Values {
    pub(super) fn of(meta: &CheckpointMeta) -> Self {
        let (secs, nanos) = to_unix(meta.created_at);
        Values {
            run_id: meta.run_id.clone(),
            id: meta.id.to_string(),
            parent: meta.parent.map(|p| p.to_string()),
            secs,
            nanos,
            superstep: meta.superstep as i64,
            topology_hash: meta.topology_hash as i64,
            format_version: i64::from(meta.format_version),
            checksum: meta.checksum as i64,
        }
    }

    /// The parameters, with `payload` last.
    pub(super) fn params<'a>(&'a self, payload: &'a Vec<u8>) -> [&'a (dyn ToSql + Sync); 10] {
        [
            &self.run_id,
            &self.id,
            &self.parent,
            &self.secs,
            &self.nanos,
            &self.superstep,
            &self.topology_hash,
            &self.format_version,
            &self.checksum,
            payload,
        ]
    }
}

/// Names a row in errors.
pub(super) fn row_what(db: &str, run_id: &str, id: &str) -> String {
    format!("checkpoint {id} of run '{run_id}' in PostgreSQL database '{db}'")
}

/// The metadata of a row (the [`META_COLUMNS`]), validated: a bad value
/// is a [`StoreError::Corrupt`] naming the row.
pub(super) fn meta(row: &Row, db: &str) -> Result<CheckpointMeta, StoreError> {
    let err = pg_error(db);
    let run_id: String = row.try_get(0).map_err(&err)?;
    let id: String = row.try_get(1).map_err(&err)?;
    let parent: Option<String> = row.try_get(2).map_err(&err)?;
    let what = || row_what(db, &run_id, &id);
    let bad = |field: &str| StoreError::corrupt(what(), format!("bad {field} column"));
    let get = |i: usize| row.try_get::<_, i64>(i).map_err(&err);
    let created = from_unix(get(3)?, get(4)?).ok_or_else(|| bad("created"))?;
    Ok(CheckpointMeta {
        id: id.parse::<CheckpointId>().map_err(|_| bad("id"))?,
        parent: match &parent {
            Some(p) => Some(p.parse().map_err(|_| bad("parent"))?),
            None => None,
        },
        created_at: created,
        superstep: get(5)? as u64,
        topology_hash: get(6)? as u64,
        format_version: u32::try_from(get(7)?).map_err(|_| bad("format_version"))?,
        checksum: get(8)? as u64,
        payload_len: u64::try_from(get(9)?).map_err(|_| bad("payload"))?,
        run_id,
    })
}

/// A whole row (the metadata columns, then the payload), verified.
pub(super) fn checkpoint(row: &Row, db: &str) -> Result<Checkpoint, StoreError> {
    let meta = meta(row, db)?;
    let payload: Vec<u8> = row.try_get(10).map_err(pg_error(db))?;
    let what = row_what(db, &meta.run_id, &meta.id.to_string());
    let cp = Checkpoint::from_parts(meta, payload);
    cp.verify()
        .map_err(|e| StoreError::corrupt(what, e.to_string()))?;
    Ok(cp)
}
