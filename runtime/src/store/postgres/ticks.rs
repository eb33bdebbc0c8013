//! Schedule ticks claimed in `troupe_schedule_ticks`: the worker whose
//! insert of (team, schedule, tick) lands runs the tick; every other
//! worker sharing the database finds the row there and skips it.

use super::super::error::StoreError;
use super::super::lease::LeaseHolder;
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

impl PostgresStore {
    /// Inserts the claim of one tick; `true` when this call inserted it.
    pub(super) async fn insert_tick(
        &self,
        team: &str,
        schedule: &str,
        tick_secs: i64,
    ) -> Result<bool, StoreError> {
        let err = pg_error(&self.db);
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let holder = LeaseHolder::this_process();
        let pid = i64::from(holder.pid);
        let inserted = client
            .execute(
                "INSERT INTO troupe_schedule_ticks (team, schedule, tick_secs, pid, host) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[&team, &schedule, &tick_secs, &pid, &holder.host],
            )
            .await
            .map_err(&err)?;
        Ok(inserted == 1)
    }
}
