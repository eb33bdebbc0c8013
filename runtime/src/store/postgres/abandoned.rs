//! The leases their holders left behind in `troupe_run_leases`: a row
//! whose heartbeat is older than [`STALE_AFTER`] by the database's clock
//! (its holder died, hung or lost its machine), or whose holder is a
//! process of this host that has ended. Each is a run cut short while it
//! ran; a run that ended in any way (completed, failed, cancelled) gave
//! its lease back, so it is not among them.

use super::super::error::StoreError;
use super::super::lease::{Abandoned, LeaseHolder, STALE_AFTER, from_unix_secs};
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

impl PostgresStore {
    /// Every lease left behind, oldest holder first.
    pub(super) async fn left_behind(&self) -> Result<Vec<Abandoned>, StoreError> {
        let err = pg_error(&self.db);
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let stale_secs = STALE_AFTER.as_secs_f64();
        let rows = client
            .query(
                "SELECT run_id, pid, host, since_secs, note, \
                 now() - beat > make_interval(secs => $1) \
                 FROM troupe_run_leases ORDER BY since_secs, run_id",
                &[&stale_secs],
            )
            .await
            .map_err(&err)?;
        let mut out = Vec::new();
        for row in rows {
            let holder = LeaseHolder {
                pid: u32::try_from(row.try_get::<_, i64>(1).map_err(&err)?).unwrap_or(0),
                host: row.try_get(2).map_err(&err)?,
                since: from_unix_secs(row.try_get(3).map_err(&err)?),
            };
            let stale: bool = row.try_get(5).map_err(&err)?;
            if stale || holder.is_dead_here() {
                out.push(Abandoned {
                    run_id: row.try_get(0).map_err(&err)?,
                    holder,
                    note: row.try_get(4).map_err(&err)?,
                });
            }
        }
        Ok(out)
    }
}
