//! [`PostgresBoard`]: the [`RunBoard`] of workers sharing one PostgreSQL
//! database (migration 3): `troupe_serve_runs` (one record per run),
//! `troupe_serve_events` (one row per event, keyed by run and position),
//! `troupe_serve_controls` (requests to the worker running a run) and
//! `troupe_serve_workers` (heartbeats). Wake-ups are `NOTIFY`s on the
//! channels `troupe_serve_run` (payload: the run id) and
//! `troupe_serve_control`, heard on one connection kept for `LISTEN`
//! (`board_listen.rs`).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_postgres::Row;

use super::super::board::{Ask, AskState, BoardRun, Control, Notice, RunBoard};
use super::super::error::StoreError;
use super::super::lease::{STALE_AFTER, this_host};
use super::board_listen::{CONTROL_CHANNEL, RUN_CHANNEL};
use super::connect::{self, CONNECT_TIMEOUT, pg_error, pool_error};
use super::migrate;

/// The columns a record is read from, in [`record`]'s order.
const COLUMNS: &str = "r.run_id, r.team, r.session, r.worker, r.status, r.started_ms, r.detail::text, \
     r.webhook::text, coalesce(w.beat > now() - make_interval(secs => $1), false)";

/// The board of the workers on one PostgreSQL database.
#[derive(Clone)]
pub struct PostgresBoard {
    pub(super) pool: Pool,
    pub(super) db: Arc<str>,
    pub(super) worker: Arc<str>,
    notices: broadcast::Sender<Notice>,
}

impl std::fmt::Debug for PostgresBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBoard")
            .field("db", &self.db)
            .field("worker", &self.worker)
            .finish()
    }
}

impl PostgresBoard {
    /// Connects to the database at `url` (applying the migrations it
    /// lacks), starts listening for wake-ups (listening once this returns,
    /// unless that takes longer than the connect timeout) and beating this worker's
    /// heartbeat (both in the background, for as long as the runtime
    /// runs). Fails as `PostgresStore::connect` does.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let config = connect::parse(url, CONNECT_TIMEOUT)?;
        let db: Arc<str> = Arc::from(connect::describe(&config));
        let pool = connect::pool(config.clone(), CONNECT_TIMEOUT)?;
        let mut client = pool.get().await.map_err(pool_error(&db))?;
        migrate::apply(&mut client, &db).await?;
        drop(client);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let worker: Arc<str> = format!("{}:{}:{nanos:08x}", this_host(), std::process::id()).into();
        let (notices, _) = broadcast::channel(1024);
        let board = PostgresBoard {
            pool,
            db,
            worker,
            notices,
        };
        board.beat().await?;
        let mut ready = board.notices.subscribe();
        super::board_listen::start(config, board.db.clone(), board.notices.clone())?;
        // Listening before this returns, so no change after it is missed
        // (should it take longer, the readers' polling covers the gap).
        let _ = tokio::time::timeout(CONNECT_TIMEOUT, async {
            while !matches!(ready.recv().await, Ok(Notice::Resync) | Err(_)) {}
        })
        .await;
        let beating = board.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(super::super::lease::HEARTBEAT);
            loop {
                tick.tick().await;
                if let Err(e) = beating.beat().await {
                    tracing::warn!(db = %beating.db, "cannot beat the worker's heartbeat: {e}");
                }
            }
        });
        Ok(board)
    }

    pub(super) async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(pool_error(&self.db))
    }
}

/// How old a heartbeat may be, in seconds, for its worker to count alive.
fn stale_secs() -> f64 {
    STALE_AFTER.as_secs_f64()
}

/// A record from a row of [`COLUMNS`].
fn record(row: &Row) -> Result<BoardRun, tokio_postgres::Error> {
    Ok(BoardRun {
        id: row.try_get(0)?,
        team: row.try_get(1)?,
        session: row.try_get(2)?,
        worker: row.try_get(3)?,
        status: row.try_get(4)?,
        started_ms: row.try_get(5)?,
        detail: json(row.try_get::<_, Option<String>>(6)?).unwrap_or(Value::Null),
        webhook: json(row.try_get::<_, Option<String>>(7)?),
        alive: row.try_get(8)?,
    })
}

/// JSON text read back (the database only holds what was written as JSON).
fn json(text: Option<String>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

/// Writes `r` (the worker, status, JSON and webhook of an existing one
/// replaced; a webhook never forgotten).
const UPSERT: &str = "INSERT INTO troupe_serve_runs \
     (run_id, team, session, worker, status, started_ms, detail, webhook, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8::text::jsonb, now()) \
     ON CONFLICT (run_id) DO UPDATE SET worker = excluded.worker, status = excluded.status, \
     detail = excluded.detail, webhook = coalesce(excluded.webhook, troupe_serve_runs.webhook), \
     updated_at = now()";

#[async_trait]
impl RunBoard for PostgresBoard {
    fn worker(&self) -> &str {
        &self.worker
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    async fn publish(
        &self,
        run_id: &str,
        record: Option<&BoardRun>,
        first: u64,
        events: &[Arc<str>],
    ) -> Result<(), StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        if let Some(r) = record {
            tx.execute(
                UPSERT,
                &[
                    &r.id,
                    &r.team,
                    &r.session,
                    &r.worker,
                    &r.status,
                    &r.started_ms,
                    &r.detail.to_string(),
                    &r.webhook.as_ref().map(Value::to_string),
                ],
            )
            .await
            .map_err(&err)?;
        }
        if !events.is_empty() {
            let first = i64::try_from(first).unwrap_or(i64::MAX);
            let lines: Vec<&str> = events.iter().map(|e| &**e).collect();
            tx.execute(
                "INSERT INTO troupe_serve_events (run_id, seq, line) \
                 SELECT $1, $2 + n - 1, line FROM unnest($3::text[]) WITH ORDINALITY AS l(line, n) \
                 ON CONFLICT DO NOTHING",
                &[&run_id, &first, &lines],
            )
            .await
            .map_err(&err)?;
        }
        tx.execute("SELECT pg_notify($1, $2)", &[&RUN_CHANNEL, &run_id])
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)
    }

    async fn events(
        &self,
        run_id: &str,
        from: u64,
        limit: u32,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let err = pg_error(&self.db);
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let rows = self
            .client()
            .await?
            .query(
                "SELECT seq, line FROM troupe_serve_events WHERE run_id = $1 AND seq >= $2 \
                 ORDER BY seq LIMIT $3",
                &[&run_id, &from, &i64::from(limit)],
            )
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.try_get(0)?;
                Ok((u64::try_from(seq).unwrap_or(0), r.try_get(1)?))
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(&err)
    }

    async fn run(&self, run_id: &str) -> Result<Option<BoardRun>, StoreError> {
        let err = pg_error(&self.db);
        let sql = format!(
            "SELECT {COLUMNS} FROM troupe_serve_runs r \
             LEFT JOIN troupe_serve_workers w ON w.worker = r.worker WHERE r.run_id = $2"
        );
        let row = self
            .client()
            .await?
            .query_opt(&sql, &[&stale_secs(), &run_id])
            .await
            .map_err(&err)?;
        row.as_ref().map(record).transpose().map_err(&err)
    }

    async fn runs(&self, limit: u32) -> Result<Vec<BoardRun>, StoreError> {
        let err = pg_error(&self.db);
        let sql = format!(
            "SELECT {COLUMNS} FROM troupe_serve_runs r \
             LEFT JOIN troupe_serve_workers w ON w.worker = r.worker \
             ORDER BY r.started_ms DESC, r.run_id DESC LIMIT $2"
        );
        let rows = self
            .client()
            .await?
            .query(&sql, &[&stale_secs(), &i64::from(limit)])
            .await
            .map_err(&err)?;
        rows.iter()
            .map(record)
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    async fn claim_session(&self, r: &BoardRun) -> Result<Option<BoardRun>, StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        let key = format!("{}/{}", r.team, r.session.as_deref().unwrap_or(""));
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key])
            .await
            .map_err(&err)?;
        let sql = format!(
            "SELECT {COLUMNS} FROM troupe_serve_runs r \
             JOIN troupe_serve_workers w ON w.worker = r.worker \
             WHERE r.team = $2 AND r.session = $3 AND r.status = 'running' \
             AND r.worker <> $4 AND r.run_id <> $5 AND w.beat > now() - make_interval(secs => $1) \
             ORDER BY r.started_ms DESC, r.run_id DESC LIMIT 1"
        );
        let other = tx
            .query_opt(
                &sql,
                &[&stale_secs(), &r.team, &r.session, &r.worker, &r.id],
            )
            .await
            .map_err(&err)?;
        if let Some(row) = other {
            return record(&row).map(Some).map_err(&err);
        }
        tx.execute(
            UPSERT,
            &[
                &r.id,
                &r.team,
                &r.session,
                &r.worker,
                &r.status,
                &r.started_ms,
                &r.detail.to_string(),
                &r.webhook.as_ref().map(Value::to_string),
            ],
        )
        .await
        .map_err(&err)?;
        tx.commit().await.map_err(&err)?;
        Ok(None)
    }

    async fn running_elsewhere(
        &self,
        team: &str,
        session: &str,
    ) -> Result<Option<BoardRun>, StoreError> {
        let err = pg_error(&self.db);
        let sql = format!(
            "SELECT {COLUMNS} FROM troupe_serve_runs r \
             JOIN troupe_serve_workers w ON w.worker = r.worker \
             WHERE r.team = $2 AND r.session = $3 AND r.status = 'running' AND r.worker <> $4 \
             AND w.beat > now() - make_interval(secs => $1) \
             ORDER BY r.started_ms DESC LIMIT 1"
        );
        let row = self
            .client()
            .await?
            .query_opt(&sql, &[&stale_secs(), &team, &session, &&*self.worker])
            .await
            .map_err(&err)?;
        row.as_ref().map(record).transpose().map_err(&err)
    }

    async fn control(&self, run_id: &str, action: &str) -> Result<(), StoreError> {
        let err = pg_error(&self.db);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&err)?;
        tx.execute(
            "INSERT INTO troupe_serve_controls (run_id, action) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
            &[&run_id, &action],
        )
        .await
        .map_err(&err)?;
        tx.execute("SELECT pg_notify($1, $2)", &[&CONTROL_CHANNEL, &run_id])
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)
    }

    async fn take_controls(&self, run_ids: &[String]) -> Result<Vec<Control>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        let err = pg_error(&self.db);
        let rows = self
            .client()
            .await?
            .query(
                "DELETE FROM troupe_serve_controls WHERE run_id = ANY($1) \
                 RETURNING run_id, action",
                &[&run_ids],
            )
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|r| {
                Ok(Control {
                    run_id: r.try_get(0)?,
                    action: r.try_get(1)?,
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(&err)
    }

    async fn ask(&self, run_id: &str, kind: &str, payload: &Value) -> Result<i64, StoreError> {
        self.ask_row(run_id, kind, payload).await
    }

    async fn take_asks(&self, run_ids: &[String]) -> Result<Vec<Ask>, StoreError> {
        self.take_asks(run_ids).await
    }

    async fn reply(&self, id: i64, run_id: &str, reply: &Value) -> Result<(), StoreError> {
        self.reply_row(id, run_id, reply).await
    }

    async fn ask_state(&self, id: i64) -> Result<AskState, StoreError> {
        self.ask_state(id).await
    }

    async fn withdraw(&self, id: i64) -> Result<bool, StoreError> {
        self.withdraw_ask(id).await
    }

    async fn push_configs(&self, task_ids: &[String]) -> Result<Vec<(String, Value)>, StoreError> {
        self.push_configs(task_ids).await
    }

    async fn save_push(
        &self,
        task_id: &str,
        config_id: &str,
        config: &Value,
    ) -> Result<(), StoreError> {
        self.save_push(task_id, config_id, Some(config)).await
    }

    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), StoreError> {
        self.save_push(task_id, config_id, None).await
    }

    async fn beat(&self) -> Result<(), StoreError> {
        let err = pg_error(&self.db);
        self.client()
            .await?
            .execute(
                "INSERT INTO troupe_serve_workers (worker, beat) VALUES ($1, now()) \
                 ON CONFLICT (worker) DO UPDATE SET beat = now()",
                &[&&*self.worker],
            )
            .await
            .map_err(&err)?;
        Ok(())
    }

    async fn prune(&self, age: Duration) -> Result<(u64, u64), StoreError> {
        let err = pg_error(&self.db);
        let secs = age.as_secs_f64();
        let client = self.client().await?;
        let runs = client
            .execute(
                "DELETE FROM troupe_serve_runs r WHERE r.updated_at < now() - make_interval(secs => $1) \
                 AND (r.status NOT IN ('running', 'waiting_for_input') OR NOT EXISTS ( \
                   SELECT 1 FROM troupe_serve_workers w WHERE w.worker = r.worker \
                   AND w.beat > now() - make_interval(secs => $2)))",
                &[&secs, &stale_secs()],
            )
            .await
            .map_err(&err)?;
        let ticks = client
            .execute(
                "DELETE FROM troupe_schedule_ticks WHERE claimed_at < now() - make_interval(secs => $1)",
                &[&secs],
            )
            .await
            .map_err(&err)?;
        for sql in [
            "DELETE FROM troupe_serve_controls WHERE asked_at < now() - make_interval(secs => $1)",
            "DELETE FROM troupe_serve_asks WHERE asked_at < now() - make_interval(secs => $1)",
            "DELETE FROM troupe_serve_push WHERE created_at < now() - make_interval(secs => $1)",
            "DELETE FROM troupe_serve_workers WHERE beat < now() - make_interval(secs => $1)",
        ] {
            client.execute(sql, &[&secs]).await.map_err(&err)?;
        }
        Ok((runs, ticks))
    }
}
