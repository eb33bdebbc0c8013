//! Runs that failed mid-way, in `troupe_run_failures`: one row per run,
//! written when a run fails while its lease is held, deleted when its
//! lease is taken again (the run is being carried on).

use super::super::error::StoreError;
use super::super::failure::RunFailure;
use super::super::key::check_run_id;
use super::super::lineage::{from_epoch, since_epoch};
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

impl PostgresStore {
    /// Keeps `failure` as run `run_id`'s (replacing one kept before).
    pub(super) async fn put_failure(
        &self,
        run_id: &str,
        failure: &RunFailure,
    ) -> Result<(), StoreError> {
        check_run_id(run_id)?;
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let (secs, nanos) = since_epoch(failure.failed_at);
        let (secs, nanos) = (i64::try_from(secs).unwrap_or(i64::MAX), i64::from(nanos));
        client
            .execute(
                "INSERT INTO troupe_run_failures (run_id, error, failed_secs, failed_nanos) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO UPDATE SET \
                 error = EXCLUDED.error, failed_secs = EXCLUDED.failed_secs, \
                 failed_nanos = EXCLUDED.failed_nanos",
                &[&run_id, &failure.error, &secs, &nanos],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }

    /// Run `run_id`'s failure, if one is kept.
    pub(super) async fn get_failure(&self, run_id: &str) -> Result<Option<RunFailure>, StoreError> {
        let err = pg_error(&self.db);
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let row = client
            .query_opt(
                "SELECT error, failed_secs, failed_nanos FROM troupe_run_failures WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(&err)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let secs: i64 = row.try_get(1).map_err(&err)?;
        let nanos: i64 = row.try_get(2).map_err(&err)?;
        Ok(Some(RunFailure {
            error: row.try_get(0).map_err(&err)?,
            failed_at: from_epoch(
                u64::try_from(secs).unwrap_or(0),
                u32::try_from(nanos).unwrap_or(0),
            ),
        }))
    }
}
