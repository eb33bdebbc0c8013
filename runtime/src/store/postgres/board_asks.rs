//! Requests to the worker holding a run that wait for its reply
//! (`troupe_serve_asks`, migration 6): an answer to a run's question or a
//! double text's rollback sent through another worker. The asker inserts
//! a row and `NOTIFY`s the requests' channel; the worker holding the run
//! takes it (`taken_by`, so one worker carries it out), writes the reply
//! and `NOTIFY`s the run's channel, on which the asker waits.

use serde_json::Value;

use super::super::board::{Ask, AskState};
use super::super::error::StoreError;
use super::board::PostgresBoard;
use super::board_listen::{CONTROL_CHANNEL, RUN_CHANNEL};
use super::connect::pg_error;

impl PostgresBoard {
    /// Inserts request `kind` on `run_id` and wakes the workers; its id.
    pub(super) async fn ask_row(
        &self,
        run_id: &str,
        kind: &str,
        payload: &Value,
    ) -> Result<i64, StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO troupe_serve_asks (run_id, kind, payload) \
             VALUES ($1, $2, $3::text::jsonb) RETURNING id",
                &[&run_id, &kind, &payload.to_string()],
            )
            .await
            .map_err(&err)?
            .try_get(0)
            .map_err(&err)?;
        tx.execute("SELECT pg_notify($1, $2)", &[&CONTROL_CHANNEL, &run_id])
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)?;
        Ok(id)
    }

    /// Takes the requests not taken yet on `run_ids`, oldest first.
    pub(super) async fn take_asks(&self, run_ids: &[String]) -> Result<Vec<Ask>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        let err = pg_error(&self.db);
        let rows = self
            .client()
            .await?
            .query(
                "UPDATE troupe_serve_asks SET taken_by = $2 WHERE id IN ( \
               SELECT id FROM troupe_serve_asks WHERE run_id = ANY($1) AND taken_by IS NULL \
               FOR UPDATE SKIP LOCKED) \
             RETURNING id, run_id, kind, payload::text",
                &[&run_ids, &&*self.worker],
            )
            .await
            .map_err(&err)?;
        let mut asks = rows
            .iter()
            .map(|r| {
                Ok(Ask {
                    id: r.try_get(0)?,
                    run_id: r.try_get(1)?,
                    kind: r.try_get(2)?,
                    payload: serde_json::from_str(r.try_get::<_, &str>(3)?).unwrap_or(Value::Null),
                })
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(&err)?;
        asks.sort_by_key(|a| a.id);
        Ok(asks)
    }

    /// Writes the reply to request `id` and wakes its asker (on the run's
    /// channel).
    pub(super) async fn reply_row(
        &self,
        id: i64,
        run_id: &str,
        reply: &Value,
    ) -> Result<(), StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        tx.execute(
            "UPDATE troupe_serve_asks SET reply = $2::text::jsonb WHERE id = $1",
            &[&id, &reply.to_string()],
        )
        .await
        .map_err(&err)?;
        tx.execute("SELECT pg_notify($1, $2)", &[&RUN_CHANNEL, &run_id])
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)
    }

    /// Where request `id` stands.
    pub(super) async fn ask_state(&self, id: i64) -> Result<AskState, StoreError> {
        let err = pg_error(&self.db);
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT taken_by IS NOT NULL, reply::text FROM troupe_serve_asks WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(&err)?;
        let Some(row) = row else {
            return Ok(AskState::Gone);
        };
        let taken: bool = row.try_get(0).map_err(&err)?;
        let reply: Option<String> = row.try_get(1).map_err(&err)?;
        Ok(match (taken, reply) {
            (_, Some(r)) => AskState::Replied(serde_json::from_str(&r).unwrap_or(Value::Null)),
            (true, None) => AskState::Taken,
            (false, None) => AskState::Waiting,
        })
    }

    /// Deletes request `id` unless it was taken; whether it was deleted.
    pub(super) async fn withdraw_ask(&self, id: i64) -> Result<bool, StoreError> {
        let err = pg_error(&self.db);
        let n = self
            .client()
            .await?
            .execute(
                "DELETE FROM troupe_serve_asks WHERE id = $1 AND taken_by IS NULL",
                &[&id],
            )
            .await
            .map_err(&err)?;
        Ok(n == 1)
    }
}
