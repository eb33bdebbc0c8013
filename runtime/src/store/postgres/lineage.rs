//! A forked run's lineage in `troupe_run_lineage`: one row per forked
//! run (the run and checkpoint it was forked from, and when), beside —
//! never in — the checkpoints, as SQLite's `run_lineage`.

use super::super::error::StoreError;
use super::super::key::check_run_id;
use super::super::lineage::{Lineage, from_epoch, since_epoch};
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

impl PostgresStore {
    /// Keeps `lineage` as run `run_id`'s (replacing one kept before).
    pub(super) async fn put_lineage(
        &self,
        run_id: &str,
        lineage: &Lineage,
    ) -> Result<(), StoreError> {
        check_run_id(run_id)?;
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let (secs, nanos) = since_epoch(lineage.forked_at);
        let (secs, nanos) = (i64::try_from(secs).unwrap_or(i64::MAX), i64::from(nanos));
        let checkpoint = lineage.checkpoint.to_string();
        client
            .execute(
                "INSERT INTO troupe_run_lineage \
                 (run_id, parent_run, checkpoint, forked_secs, forked_nanos) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id) DO UPDATE SET \
                 parent_run = EXCLUDED.parent_run, checkpoint = EXCLUDED.checkpoint, \
                 forked_secs = EXCLUDED.forked_secs, forked_nanos = EXCLUDED.forked_nanos",
                &[&run_id, &lineage.parent_run, &checkpoint, &secs, &nanos],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }

    /// Run `run_id`'s lineage; `None` when it was not forked.
    pub(super) async fn get_lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        let err = pg_error(&self.db);
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let row = client
            .query_opt(
                "SELECT parent_run, checkpoint, forked_secs, forked_nanos \
                 FROM troupe_run_lineage WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(&err)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let checkpoint: String = row.try_get(1).map_err(&err)?;
        let checkpoint = checkpoint
            .parse()
            .map_err(|e: StoreError| StoreError::Corrupt {
                what: format!(
                    "the lineage of run '{run_id}' in PostgreSQL database '{}'",
                    self.db
                ),
                reason: e.to_string(),
            })?;
        let secs: i64 = row.try_get(2).map_err(&err)?;
        let nanos: i64 = row.try_get(3).map_err(&err)?;
        Ok(Some(Lineage {
            parent_run: row.try_get(0).map_err(&err)?,
            checkpoint,
            forked_at: from_epoch(
                u64::try_from(secs).unwrap_or(0),
                u32::try_from(nanos).unwrap_or(0),
            ),
        }))
    }
}
