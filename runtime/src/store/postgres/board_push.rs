//! A2A push notification configs by task (`troupe_serve_push`, migration
//! 6), so the worker holding a task delivers them whichever worker they
//! were created through. A change `NOTIFY`s the requests' channel: the
//! worker holding the task loads its configs again.

use serde_json::Value;

use super::super::error::StoreError;
use super::board::PostgresBoard;
use super::board_listen::CONTROL_CHANNEL;
use super::connect::pg_error;

impl PostgresBoard {
    /// The configs of `task_ids`, as (task id, config).
    pub(super) async fn push_configs(
        &self,
        task_ids: &[String],
    ) -> Result<Vec<(String, Value)>, StoreError> {
        if task_ids.is_empty() {
            return Ok(Vec::new());
        }
        let err = pg_error(&self.db);
        let rows = self
            .client()
            .await?
            .query(
                "SELECT task_id, config::text FROM troupe_serve_push WHERE task_id = ANY($1) \
             ORDER BY created_at, config_id",
                &[&task_ids],
            )
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|r| {
                let config: &str = r.try_get(1)?;
                Ok((
                    r.try_get(0)?,
                    serde_json::from_str(config).unwrap_or(Value::Null),
                ))
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(&err)
    }

    /// Stores config `config_id` of `task_id` (deletes it when `None`) and
    /// wakes the workers.
    pub(super) async fn save_push(
        &self,
        task_id: &str,
        config_id: &str,
        config: Option<&Value>,
    ) -> Result<(), StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        match config {
            Some(c) => {
                tx.execute(
                    "INSERT INTO troupe_serve_push (task_id, config_id, config) \
                 VALUES ($1, $2, $3::text::jsonb) \
                 ON CONFLICT (task_id, config_id) DO UPDATE SET config = excluded.config",
                    &[&task_id, &config_id, &c.to_string()],
                )
                .await
                .map_err(&err)?;
            }
            None => {
                tx.execute(
                    "DELETE FROM troupe_serve_push WHERE task_id = $1 AND config_id = $2",
                    &[&task_id, &config_id],
                )
                .await
                .map_err(&err)?;
            }
        }
        tx.execute("SELECT pg_notify($1, $2)", &[&CONTROL_CHANNEL, &task_id])
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)
    }
}
