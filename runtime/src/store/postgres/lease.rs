//! [`PostgresStore`]'s run leases: one row per held run in
//! `troupe_run_leases`, its heartbeat (`beat`, the database's clock)
//! renewed every [`HEARTBEAT`] while the lease is held.
//!
//! The SQLite scheme on a shared server: a row is taken over when its
//! heartbeat is older than [`STALE_AFTER`] by the database's clock (the
//! holder died, hung, or lost its machine: any worker may take it), or at
//! once when its holder is a process of this host that has ended. Taking
//! a lease is one transaction: insert the row, or lock the existing one
//! (`FOR UPDATE`) and replace it if stale, so two processes never both
//! take it. Every row carries a token, so a holder whose lease was taken
//! over neither renews nor deletes its successor's.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use async_trait::async_trait;
use deadpool_postgres::Pool;

use super::super::error::StoreError;
use super::super::key::check_run_id;
use super::super::lease::{
    Abandoned, HEARTBEAT, LeaseError, LeaseHolder, RunLease, RunLeases, STALE_AFTER,
    from_unix_secs, unix_secs,
};
use super::PostgresStore;
use super::connect::{pg_error, pool_error};

#[async_trait]
impl RunLeases for PostgresStore {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        self.lease(run_id, None, false).await
    }

    async fn acquire_noting(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        self.lease(run_id, Some(note), false).await
    }

    async fn take_over(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        self.lease(run_id, Some(note), true).await
    }

    async fn abandoned(&self) -> Result<Vec<Abandoned>, StoreError> {
        self.left_behind().await
    }

    async fn claim_tick(
        &self,
        team: &str,
        schedule: &str,
        tick_secs: i64,
    ) -> Result<bool, StoreError> {
        self.insert_tick(team, schedule, tick_secs).await
    }
}

impl PostgresStore {
    /// Takes the lease on `run_id` (with `note`, or keeping the note of
    /// the row it takes over; only a row left behind when
    /// `left_behind_only`) and starts its heartbeat.
    async fn lease(
        &self,
        run_id: &str,
        note: Option<&str>,
        left_behind_only: bool,
    ) -> Result<RunLease, LeaseError> {
        check_run_id(run_id)?;
        let holder = LeaseHolder::this_process();
        let row = Row {
            pool: self.pool.clone(),
            db: self.db.to_string(),
            run_id: run_id.to_string(),
            token: new_token(),
        };
        row.take(&holder, note, left_behind_only).await?;
        let beats = {
            let row = row.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(HEARTBEAT);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    // A beat that fails is retried at the next tick; the
                    // lease stays taken until STALE_AFTER passes without one.
                    if matches!(row.beat().await, Ok(false)) {
                        tracing::warn!(
                            run_id = %row.run_id,
                            db = %row.db,
                            "the lease on the run was taken over (its heartbeat stopped for longer than {}s): another process may run it too",
                            STALE_AFTER.as_secs()
                        );
                        return;
                    }
                }
            })
        };
        Ok(RunLease::new(run_id, holder, Held { row, beats }))
    }
}

/// A lease row of this process.
#[derive(Clone)]
struct Row {
    pool: Pool,
    db: String,
    run_id: String,
    token: String,
}

impl Row {
    /// Takes the row for `holder` unless a live holder has it (or, when
    /// `left_behind_only`, unless there is no row: its run ended since it
    /// was seen left behind); a failure recorded for the run is forgotten
    /// (it is being run again).
    async fn take(
        &self,
        holder: &LeaseHolder,
        note: Option<&str>,
        left_behind_only: bool,
    ) -> Result<(), LeaseError> {
        let err = pg_error(&self.db);
        let mut client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let tx = client.transaction().await.map_err(&err)?;
        let (pid, since) = (i64::from(holder.pid), unix_secs(holder.since));
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
            [&self.run_id, &self.token, &pid, &holder.host, &since, &note];
        let inserted = tx
            .execute(
                "INSERT INTO troupe_run_leases (run_id, token, pid, host, since_secs, beat, note) \
                 VALUES ($1, $2, $3, $4, $5, now(), $6) ON CONFLICT (run_id) DO NOTHING",
                &params,
            )
            .await
            .map_err(&err)?;
        if inserted == 1 && left_behind_only {
            // Dropped uncommitted: rolled back.
            return Err(LeaseError::Held {
                run_id: self.run_id.clone(),
                holder: None,
            });
        }
        if inserted == 0 {
            let stale_secs = STALE_AFTER.as_secs_f64();
            let row = tx
                .query_opt(
                    "SELECT pid, host, since_secs, now() - beat > make_interval(secs => $2), token \
                     FROM troupe_run_leases WHERE run_id = $1 FOR UPDATE",
                    &[&self.run_id, &stale_secs],
                )
                .await
                .map_err(&err)?;
            if let Some(row) = row {
                let other = LeaseHolder {
                    pid: u32::try_from(row.try_get::<_, i64>(0).map_err(&err)?).unwrap_or(0),
                    host: row.try_get(1).map_err(&err)?,
                    since: from_unix_secs(row.try_get(2).map_err(&err)?),
                };
                let stale: bool = row.try_get(3).map_err(&err)?;
                let token: String = row.try_get(4).map_err(&err)?;
                // This process's own lease, dropped, its row's deletion
                // not yet done.
                let given_back = other.pid == std::process::id()
                    && other.host == holder.host
                    && !live().contains(&token);
                if !stale && !given_back && !other.is_dead_here() {
                    return Err(LeaseError::Held {
                        run_id: self.run_id.clone(),
                        holder: Some(other),
                    });
                }
            }
            tx.execute(
                "INSERT INTO troupe_run_leases (run_id, token, pid, host, since_secs, beat, note) \
                 VALUES ($1, $2, $3, $4, $5, now(), $6) ON CONFLICT (run_id) DO UPDATE SET \
                 token = EXCLUDED.token, pid = EXCLUDED.pid, host = EXCLUDED.host, \
                 since_secs = EXCLUDED.since_secs, beat = now(), \
                 note = coalesce(EXCLUDED.note, troupe_run_leases.note)",
                &params,
            )
            .await
            .map_err(&err)?;
        }
        tx.execute(
            "DELETE FROM troupe_run_failures WHERE run_id = $1",
            &[&self.run_id],
        )
        .await
        .map_err(&err)?;
        live().insert(self.token.clone());
        if let Err(e) = tx.commit().await {
            live().remove(&self.token);
            return Err(err(e).into());
        }
        Ok(())
    }

    /// Renews the heartbeat (of this row only); `false` when the row is no
    /// longer this lease's (taken over).
    async fn beat(&self) -> Result<bool, StoreError> {
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        let n = client
            .execute(
                "UPDATE troupe_run_leases SET beat = now() WHERE run_id = $1 AND token = $2",
                &[&self.run_id, &self.token],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(n == 1)
    }

    /// Deletes the row, trying again on failure (a busy pool, a dropped
    /// connection) a few times before saying so: a row left behind holds
    /// its run, stale in [`STALE_AFTER`], until a worker takes it over.
    async fn give_back(&self) {
        let mut wait = std::time::Duration::from_millis(100);
        for attempt in 1..=RELEASE_TRIES {
            match self.release().await {
                Ok(()) => return,
                Err(e) if attempt == RELEASE_TRIES => tracing::warn!(
                    run_id = %self.run_id,
                    db = %self.db,
                    error = %e,
                    "the run's lease could not be given back; it is left to go stale ({}s) and be taken over",
                    STALE_AFTER.as_secs()
                ),
                Err(_) => {
                    tokio::time::sleep(wait).await;
                    wait *= 4;
                }
            }
        }
    }

    /// Deletes the row (if it is still this one).
    async fn release(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error(&self.db))?;
        client
            .execute(
                "DELETE FROM troupe_run_leases WHERE run_id = $1 AND token = $2",
                &[&self.run_id, &self.token],
            )
            .await
            .map_err(pg_error(&self.db))?;
        Ok(())
    }
}

/// How many times a lease's row is asked to be deleted before it is left
/// behind.
const RELEASE_TRIES: u32 = 4;

/// A held lease: stops the heartbeat and deletes the row when dropped.
struct Held {
    row: Row,
    beats: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.beats.abort();
        live().remove(&self.row.token);
        // Best effort, on the runtime if there is one: a row left behind
        // names this process, which is then dead (or its heartbeat
        // stale), so it is taken over.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let row = self.row.clone();
            runtime.spawn(async move { row.give_back().await });
        }
    }
}

/// The tokens of the leases this process holds (a row of this process
/// whose token is not here was given back).
fn live() -> std::sync::MutexGuard<'static, HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// A token no other lease of any process has: host, pid, time and a
/// counter.
fn new_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{}-{nanos}-{}",
        super::super::lease::this_host(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
