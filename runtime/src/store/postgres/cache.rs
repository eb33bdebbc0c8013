//! [`ResultCache`] for a [`PostgresStore`]: table `troupe_node_cache`
//! (migration [`NODE_CACHE`]), one row per key, shared by every worker on
//! the database.

use async_trait::async_trait;

use super::super::error::StoreError;
use super::super::result_cache::ResultCache;
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

/// The migration making the cache's table: its SQL lives in
/// `migrations/node_cache.sql`. Its version follows the migrations
/// before it in `migrate.rs`'s list.
pub(super) const NODE_CACHE: (&str, &str) = (
    "node result cache",
    include_str!("migrations/node_cache.sql"),
);

#[async_trait]
impl ResultCache for PostgresStore {
    async fn cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let row = client
            .query_opt(
                "SELECT value FROM troupe_node_cache WHERE key = $1",
                &[&key],
            )
            .await
            .map_err(pg_error(&self.db))?;
        row.map(|r| r.try_get::<_, Vec<u8>>(0))
            .transpose()
            .map_err(pg_error(&self.db))
    }

    async fn save_cached(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        client
            .execute(
                "INSERT INTO troupe_node_cache (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
                &[&key, &value],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }
}
