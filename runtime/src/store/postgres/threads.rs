//! [`PostgresStore`] as a [`ThreadStore`]: one row per conversation.

use async_trait::async_trait;

use super::super::error::StoreError;
use super::super::key::check_conversation_id;
use super::super::traits::ThreadStore;
use super::PostgresStore;
use super::connect::pg_error;
use super::internals::{decode_thread, encode_thread};
use crate::thread::Thread;

#[async_trait]
impl ThreadStore for PostgresStore {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        check_conversation_id(conversation)?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT record FROM troupe_threads WHERE conversation = $1",
                &[&conversation],
            )
            .await
            .map_err(pg_error(&self.db))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let record: Vec<u8> = row.try_get(0).map_err(pg_error(&self.db))?;
        let what = format!(
            "conversation '{conversation}' in PostgreSQL database '{}'",
            self.db
        );
        decode_thread(&record, &what).map(Some)
    }

    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        check_conversation_id(conversation)?;
        let record = encode_thread(thread, conversation)?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO troupe_threads (conversation, record, updated_at) \
                 VALUES ($1, $2, now()) ON CONFLICT (conversation) \
                 DO UPDATE SET record = EXCLUDED.record, updated_at = now()",
                &[&conversation, &record],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }

    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        check_conversation_id(conversation)?;
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM troupe_threads WHERE conversation = $1",
                &[&conversation],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(n > 0)
    }

    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT conversation FROM troupe_threads ORDER BY conversation",
                &[],
            )
            .await
            .map_err(pg_error(&self.db))?;
        rows.iter()
            .map(|r| r.try_get(0).map_err(pg_error(&self.db)))
            .collect()
    }
}
