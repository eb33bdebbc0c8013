//! Versioned schema migrations, recorded in `troupe_migrations`.
//!
//! Each migration runs once, in order, in one transaction with the row
//! that records it, under a transaction-level advisory lock: processes
//! starting together on one database apply each migration once. A
//! database holding a migration this build does not know is refused
//! ([`PostgresFailure::Schema`]) rather than written in an older shape.

use deadpool_postgres::Client;

use super::super::error::StoreError;
use super::super::postgres_failure::PostgresFailure;
use super::cache::NODE_CACHE;
use super::connect::pg_error;

/// The advisory lock key the migrations take (`troupe` in ASCII).
const LOCK_KEY: i64 = 0x7472_6f75_7065;

/// The migrations, oldest first: (version, name, SQL). Ids and run ids
/// are compared byte by byte (`COLLATE "C"`), as Rust orders strings.
pub(super) const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "checkpoints, threads and run leases",
        r#"
CREATE TABLE troupe_checkpoints (
    run_id         text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    parent         text COLLATE "C",
    created_secs   bigint NOT NULL,
    created_nanos  bigint NOT NULL,
    superstep      bigint NOT NULL,
    topology_hash  bigint NOT NULL,
    format_version bigint NOT NULL,
    checksum       bigint NOT NULL,
    payload        bytea  NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE troupe_threads (
    conversation text COLLATE "C" NOT NULL PRIMARY KEY,
    record       bytea NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE troupe_run_leases (
    run_id     text COLLATE "C" NOT NULL PRIMARY KEY,
    token      text   NOT NULL,
    pid        bigint NOT NULL,
    host       text   NOT NULL,
    since_secs bigint NOT NULL,
    beat       timestamptz NOT NULL
);
"#,
    ),
    (
        2,
        "schedule ticks, each claimed by one worker",
        r#"
CREATE TABLE troupe_schedule_ticks (
    team       text COLLATE "C" NOT NULL,
    schedule   text COLLATE "C" NOT NULL,
    tick_secs  bigint NOT NULL,
    pid        bigint NOT NULL,
    host       text   NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, schedule, tick_secs)
);
"#,
    ),
    (
        3,
        "serve workers' board: run records, events, requests, heartbeats",
        r#"
CREATE TABLE troupe_serve_workers (
    worker text COLLATE "C" NOT NULL PRIMARY KEY,
    beat   timestamptz NOT NULL
);
CREATE TABLE troupe_serve_runs (
    run_id     text COLLATE "C" NOT NULL PRIMARY KEY,
    team       text COLLATE "C" NOT NULL,
    session    text COLLATE "C",
    worker     text COLLATE "C" NOT NULL,
    status     text NOT NULL,
    started_ms bigint NOT NULL,
    detail     jsonb NOT NULL,
    webhook    jsonb,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX troupe_serve_runs_session ON troupe_serve_runs (team, session)
    WHERE session IS NOT NULL;
CREATE INDEX troupe_serve_runs_started ON troupe_serve_runs (started_ms DESC);
CREATE TABLE troupe_serve_events (
    run_id text COLLATE "C" NOT NULL REFERENCES troupe_serve_runs ON DELETE CASCADE,
    seq    bigint NOT NULL,
    line   text NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE troupe_serve_controls (
    run_id   text COLLATE "C" NOT NULL,
    action   text NOT NULL,
    asked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, action)
);
CREATE INDEX troupe_schedule_ticks_claimed ON troupe_schedule_ticks (claimed_at);
"#,
    ),
    (4, NODE_CACHE.0, NODE_CACHE.1),
    (
        5,
        "what a lease's run is, runs that failed, forked runs' lineage",
        r#"
ALTER TABLE troupe_run_leases ADD COLUMN note text;
CREATE TABLE troupe_run_failures (
    run_id       text COLLATE "C" NOT NULL PRIMARY KEY,
    error        text   NOT NULL,
    failed_secs  bigint NOT NULL,
    failed_nanos bigint NOT NULL
);
CREATE TABLE troupe_run_lineage (
    run_id       text COLLATE "C" NOT NULL PRIMARY KEY,
    parent_run   text COLLATE "C" NOT NULL,
    checkpoint   text   NOT NULL,
    forked_secs  bigint NOT NULL,
    forked_nanos bigint NOT NULL
);
"#,
    ),
    (
        6,
        "serve workers' requests that wait for a reply, A2A push configs",
        include_str!("migrations/serve_asks.sql"),
    ),
];

/// The newest migration this build knows.
pub(super) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Applies the migrations `client`'s database lacks; returns the versions
/// applied (empty when it was up to date).
pub(super) async fn apply(client: &mut Client, db: &str) -> Result<Vec<i32>, StoreError> {
    let err = pg_error(db);
    let tx = client.transaction().await.map_err(&err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(&err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS troupe_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(&err)?;
    let row = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM troupe_migrations",
            &[],
        )
        .await
        .map_err(&err)?;
    let found: i32 = row.try_get(0).map_err(&err)?;
    if found > latest() {
        return Err(StoreError::Postgres {
            db: db.to_string(),
            failure: PostgresFailure::Schema,
            source: format!(
                "the database is at migration {found}, this build knows up to {}: upgrade troupe",
                latest()
            )
            .into(),
        });
    }
    let mut applied = Vec::new();
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        tx.batch_execute(sql).await.map_err(&err)?;
        tx.execute(
            "INSERT INTO troupe_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await
        .map_err(&err)?;
        applied.push(*version);
    }
    tx.commit().await.map_err(&err)?;
    Ok(applied)
}

/// The newest migration applied to `client`'s database (0: none).
pub(super) async fn current(client: &Client, db: &str) -> Result<i32, StoreError> {
    let err = pg_error(db);
    let exists: bool = client
        .query_one("SELECT to_regclass('troupe_migrations') IS NOT NULL", &[])
        .await
        .map_err(&err)?
        .try_get(0)
        .map_err(&err)?;
    if !exists {
        return Ok(0);
    }
    client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM troupe_migrations",
            &[],
        )
        .await
        .map_err(&err)?
        .try_get(0)
        .map_err(&err)
}
