//! [`ResultCache`] for a [`SqliteStore`]: table `node_cache`, made by the
//! first write (`CREATE TABLE IF NOT EXISTS`, as `run_lineage` is), so a
//! database written before it opens and keeps its schema version as it
//! was; reading one without the table finds nothing and changes nothing.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::error::StoreError;
use super::result_cache::ResultCache;
use super::sqlite::SqliteStore;
use super::sqlite_rows::sql_error;

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS node_cache (
    key   TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
);
";

#[async_trait]
impl ResultCache for SqliteStore {
    async fn cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let (conn, db) = self.shared_connection();
        let key = key.to_string();
        self.gate()
            .run(move || {
                let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                let err = sql_error(&db);
                let exists: Option<i64> = conn
                    .query_row(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'node_cache'",
                        [],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(&err)?;
                if exists.is_none() {
                    return Ok(None);
                }
                conn.query_row(
                    "SELECT value FROM node_cache WHERE key = ?1",
                    params![key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&err)
            })
            .await?
    }

    async fn save_cached(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let (conn, db) = self.shared_connection();
        let (key, value) = (key.to_string(), value.to_vec());
        self.gate()
            .run(move || {
                let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                let err = sql_error(&db);
                conn.execute_batch(TABLE).map_err(&err)?;
                conn.execute(
                    "INSERT OR REPLACE INTO node_cache (key, value) VALUES (?1, ?2)",
                    params![key, value],
                )
                .map_err(&err)?;
                Ok(())
            })
            .await?
    }
}
