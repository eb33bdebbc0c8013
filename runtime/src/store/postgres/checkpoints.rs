//! [`PostgresStore`] as a [`CheckpointStore`]: one statement per call, a
//! delta's chain in one recursive query.

use async_trait::async_trait;

use super::super::durability::Durability;
use super::super::error::StoreError;
use super::super::failure::RunFailure;
use super::super::key::check_run_id;
use super::super::lineage::Lineage;
use super::super::save_errors::SaveErrors;
use super::super::traits::CheckpointStore;
use super::PostgresStore;
use super::connect::pg_error;
use super::internals::{
    DELTA_TAG, FIRST_CHAINED_VERSION, keep_bases_before_delete, keep_bases_before_prune,
};
use super::rows::{META_COLUMNS, UPSERT, Values, checkpoint, meta};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointMeta};

#[async_trait]
impl CheckpointStore for PostgresStore {
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        self.get_lineage(run_id).await
    }

    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        self.put_lineage(run_id, lineage).await.map(|()| true)
    }

    async fn failure(&self, run_id: &str) -> Result<Option<RunFailure>, StoreError> {
        self.get_failure(run_id).await
    }

    async fn save_failure(&self, run_id: &str, failure: &RunFailure) -> Result<bool, StoreError> {
        self.put_failure(run_id, failure).await.map(|()| true)
    }

    async fn save(&self, cp: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&cp.run_id)?;
        let values = Values::of(&cp.meta());
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(UPSERT)
            .await
            .map_err(pg_error(&self.db))?;
        client
            .execute(&stmt, &values.params(&cp.payload))
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }

    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let sql = format!(
            "SELECT {META_COLUMNS}, payload FROM troupe_checkpoints WHERE run_id = $1 AND id = $2"
        );
        let client = self.client().await?;
        let row = client
            .query_opt(&sql, &[&run_id, &id.to_string()])
            .await
            .map_err(pg_error(&self.db))?;
        row.map(|r| checkpoint(&r, &self.db)).transpose()
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let sql = format!(
            "SELECT {META_COLUMNS}, payload FROM troupe_checkpoints WHERE run_id = $1 \
             ORDER BY id DESC LIMIT 1"
        );
        let client = self.client().await?;
        let row = client
            .query_opt(&sql, &[&run_id])
            .await
            .map_err(pg_error(&self.db))?;
        row.map(|r| checkpoint(&r, &self.db)).transpose()
    }

    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        check_run_id(run_id)?;
        let sql =
            format!("SELECT {META_COLUMNS} FROM troupe_checkpoints WHERE run_id = $1 ORDER BY id");
        let client = self.client().await?;
        let rows = client
            .query(&sql, &[&run_id])
            .await
            .map_err(pg_error(&self.db))?;
        rows.iter().map(|r| meta(r, &self.db)).collect()
    }

    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_delete(self, run_id, id).await?;
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM troupe_checkpoints WHERE run_id = $1 AND id = $2",
                &[&run_id, &id.to_string()],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(n > 0)
    }

    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_prune(self, run_id, keep_last).await?;
        let keep = i64::try_from(keep_last).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM troupe_checkpoints WHERE run_id = $1 AND id NOT IN \
                 (SELECT id FROM troupe_checkpoints WHERE run_id = $1 ORDER BY id DESC LIMIT $2)",
                &[&run_id, &keep],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT run_id FROM troupe_checkpoints ORDER BY run_id",
                &[],
            )
            .await
            .map_err(pg_error(&self.db))?;
        rows.iter()
            .map(|r| r.try_get(0).map_err(pg_error(&self.db)))
            .collect()
    }

    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        // From the target back through parents while the row is a delta
        // (`Checkpoint::kind`, in SQL); parents are older, so a parent
        // that is not stops the walk, never a loop.
        let sql = format!(
            "WITH RECURSIVE link AS ( \
                 SELECT c.*, 0 AS depth FROM troupe_checkpoints c WHERE run_id = $1 AND id = $2 \
                 UNION ALL \
                 SELECT p.*, link.depth + 1 FROM link JOIN troupe_checkpoints p \
                   ON p.run_id = link.run_id AND p.id = link.parent AND p.id < link.id \
                 WHERE link.format_version >= $3 AND substring(link.payload FROM 1 FOR 1) = $4 \
             ) SELECT {META_COLUMNS}, payload FROM link ORDER BY depth DESC"
        );
        let min_version = i64::from(FIRST_CHAINED_VERSION);
        let tag = vec![DELTA_TAG];
        let client = self.client().await?;
        let rows = client
            .query(&sql, &[&run_id, &id.to_string(), &min_version, &tag])
            .await
            .map_err(pg_error(&self.db))?;
        rows.iter().map(|r| checkpoint(r, &self.db)).collect()
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    fn save_errors(&self) -> SaveErrors {
        self.save_errors
    }
}
