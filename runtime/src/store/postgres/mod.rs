//! [`PostgresStore`]: checkpoints, conversations and run leases in one
//! PostgreSQL database, shared by every process (and machine) that opens
//! it.
//!
//! - `connect.rs`: the URL, TLS (rustls), the pool, errors sorted by kind;
//! - `migrate.rs`: the versioned schema (`troupe_migrations`);
//! - `checkpoints.rs`, `rows.rs`: [`CheckpointStore`](super::CheckpointStore);
//! - `threads.rs`: [`ThreadStore`](super::ThreadStore);
//! - `lease.rs`: [`RunLeases`](super::RunLeases), a row with a heartbeat
//!   and a note of what the run is; `abandoned.rs`: the rows left behind;
//! - `failures.rs`, `lineage.rs`: runs that failed, runs forked;
//! - `cache.rs`: [`ResultCache`](super::ResultCache), node results by key;
//! - `internals.rs`: the checkpoint-format internals used here;
//! - `board.rs`, `board_listen.rs`: [`PostgresBoard`], what `troupe serve`
//!   workers on the database share (run records, events, wake-ups);
//!   `board_asks.rs`: requests to the worker holding a run that wait for
//!   its reply; `board_push.rs`: A2A push configs by task.

mod abandoned;
mod board;
mod board_asks;
mod board_listen;
mod board_push;
mod cache;
mod checkpoints;
mod connect;
mod failures;
mod internals;
mod lease;
mod lineage;
mod migrate;
mod rows;
mod threads;
mod ticks;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Client, Pool};

use super::durability::Durability;
use super::error::StoreError;
use super::postgres_failure::PostgresFailure;
use super::save_errors::SaveErrors;
pub use board::PostgresBoard;
use connect::CONNECT_TIMEOUT;
use connect::pool_error;

/// How a [`PostgresStore`] connects.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// How long connecting may take before the server counts as
    /// unreachable (default 5 s).
    pub connect_timeout: Duration,
    /// Whether opening applies the migrations the database lacks (default
    /// `true`); when `false`, a database not at this build's schema is
    /// refused, naming `troupe db migrate`.
    pub migrate: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            connect_timeout: CONNECT_TIMEOUT,
            migrate: true,
        }
    }
}

/// A store in a PostgreSQL database: tables `troupe_checkpoints`,
/// `troupe_threads`, `troupe_run_leases`, `troupe_schedule_ticks`
/// (`troupe serve`'s claimed schedule ticks), `troupe_node_cache`
/// (nodes' cached results, see `ResultCache`), `troupe_run_failures` and
/// `troupe_run_lineage`, created by versioned
/// migrations (`troupe_migrations`).
///
/// Every save is one committed statement: once `save` returns, the
/// checkpoint is in the server's write-ahead log, flushed as the server's
/// `synchronous_commit` says (by default on: it survives the server
/// losing power too), and visible to every process on the database. A
/// delta's chain loads in one query. Run leases are rows with a heartbeat
/// kept by the database's clock, so machines with skewed clocks agree on
/// when one is stale. Clones share the pool. Needs the `postgres` feature.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    db: Arc<str>,
    durability: Durability,
    save_errors: SaveErrors,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("db", &self.db)
            .finish()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname`,
    /// or `key=value` pairs) and applies the migrations it lacks. Fails
    /// within the connect timeout, naming the failure (bad URL,
    /// unreachable server, authentication, no such database, permission)
    /// and the database without its password.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, &PostgresOptions::default()).await
    }

    /// [`PostgresStore::connect`] with `options`.
    pub async fn connect_with(url: &str, options: &PostgresOptions) -> Result<Self, StoreError> {
        let config = connect::parse(url, options.connect_timeout)?;
        let db: Arc<str> = Arc::from(connect::describe(&config));
        let pool = connect::pool(config, options.connect_timeout)?;
        let store = PostgresStore {
            pool,
            db,
            durability: Durability::Process,
            save_errors: SaveErrors::Fail,
        };
        let mut client = store.client().await?;
        if options.migrate {
            migrate::apply(&mut client, &store.db).await?;
        } else {
            let found = migrate::current(&client, &store.db).await?;
            if found != migrate::latest() {
                return Err(StoreError::Postgres {
                    db: store.db.to_string(),
                    failure: PostgresFailure::Schema,
                    source: format!(
                        "the database is at migration {found}, this build needs {}: run `troupe db migrate`",
                        migrate::latest()
                    )
                    .into(),
                });
            }
        }
        Ok(store)
    }

    /// The same store with `save_errors` deciding what a run does when a
    /// checkpoint cannot be saved (see [`SaveErrors`]).
    pub fn with_save_errors(mut self, save_errors: SaveErrors) -> Self {
        self.save_errors = save_errors;
        self
    }

    /// The same store, reporting durability `durability` to the engine
    /// (`exit` checkpoints runs only when they stop; `process` and `fsync`
    /// both save every superstep, committed by the server as its
    /// `synchronous_commit` says).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The database, as `postgres://user@host:port/dbname` (no password).
    pub fn db(&self) -> &str {
        &self.db
    }

    /// A connection from the pool (made within the connect timeout).
    pub(super) async fn client(&self) -> Result<Client, StoreError> {
        self.pool.get().await.map_err(pool_error(&self.db))
    }
}

/// Applies the migrations the database at `url` lacks (what `troupe db
/// migrate` does); returns the database (no password), the versions
/// applied and the version it is now at.
pub async fn migrate_postgres(
    url: &str,
    connect_timeout: Duration,
) -> Result<(String, Vec<i32>, i32), StoreError> {
    let options = PostgresOptions {
        connect_timeout,
        migrate: false,
    };
    let config = connect::parse(url, options.connect_timeout)?;
    let db = connect::describe(&config);
    let pool = connect::pool(config, options.connect_timeout)?;
    let mut client = pool.get().await.map_err(pool_error(&db))?;
    let applied = migrate::apply(&mut client, &db).await?;
    let now = migrate::current(&client, &db).await?;
    Ok((db, applied, now))
}
