//! The PostgreSQL store's own guarantees, on the cluster
//! `.ci/start-postgres.sh` starts: one lease holder per run across
//! processes' pools, a stale or dead holder taken over, migrations applied
//! once and a newer schema refused, a delta's chain in one query, and each
//! way of failing to connect named (bad URL, unreachable server, unknown
//! user, missing permission) within the connect timeout, without the
//! password; a schedule tick claimed by one store of many.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg_db;

use std::time::{Duration, Instant};

use troupe_runtime::store::{
    Checkpoint, CheckpointStore, LeaseError, PostgresFailure, PostgresOptions, PostgresStore,
    RunLeases, StoreError, migrate_postgres,
};

fn failure(e: &StoreError) -> PostgresFailure {
    match e {
        StoreError::Postgres { failure, .. } => *failure,
        other => panic!("not a PostgreSQL error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_lease_holder_per_run_and_stale_or_dead_holders_are_taken_over() {
    let Some(url) = pg_db::fresh_db("leases").await else {
        return;
    };
    let a = PostgresStore::connect(&url).await.unwrap();
    let b = PostgresStore::connect(&url).await.unwrap();
    let lease = a.acquire("run-1").await.unwrap();
    let err = b.acquire("run-1").await.unwrap_err();
    assert!(
        matches!(&err, LeaseError::Held { holder: Some(h), .. } if h.pid == std::process::id()),
        "{err}"
    );
    drop(lease);
    let _taken = b.acquire("run-1").await.unwrap();

    // A process of this host that ended: taken over at once.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = troupe_runtime::store::this_host();
    pg_db::exec(
        &url,
        &format!(
            "INSERT INTO troupe_run_leases VALUES ('run-2', 'old', {dead}, '{host}', 0, now());
             INSERT INTO troupe_run_leases VALUES ('run-3', 'old', 1, 'elsewhere', 0, now() - interval '31 seconds');
             INSERT INTO troupe_run_leases VALUES ('run-4', 'old', 1, 'elsewhere', 0, now());"
        ),
    )
    .await;
    let _two = a.acquire("run-2").await.unwrap();
    // A holder elsewhere whose heartbeat stopped longer ago than the bound.
    let _three = a.acquire("run-3").await.unwrap();
    // One whose heartbeat is fresh is not.
    let err = a.acquire("run-4").await.unwrap_err();
    assert!(err.to_string().contains("pid 1 on elsewhere"), "{err}");

    // Many takers at once: exactly one wins.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = PostgresStore::connect(&url).await.unwrap();
        tasks.push(tokio::spawn(async move {
            s.acquire("run-5").await.map(|l| (s, l))
        }));
    }
    let mut won = Vec::new();
    for t in tasks {
        if let Ok(held) = t.await.unwrap() {
            won.push(held);
        }
    }
    assert_eq!(won.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_tick_is_claimed_by_one_store_of_many() {
    let Some(url) = pg_db::fresh_db("ticks").await else {
        return;
    };
    let stores = [
        PostgresStore::connect(&url).await.unwrap(),
        PostgresStore::connect(&url).await.unwrap(),
        PostgresStore::connect(&url).await.unwrap(),
    ];
    for tick in 100..110 {
        let claims =
            futures::future::join_all(stores.iter().map(|s| s.claim_tick("team", "daily", tick)))
                .await;
        let won = claims.into_iter().filter(|c| *c.as_ref().unwrap()).count();
        assert_eq!(won, 1, "tick {tick}");
    }
    // Another schedule's (or team's) same tick is a claim of its own.
    assert!(stores[0].claim_tick("team", "hourly", 100).await.unwrap());
    assert!(stores[1].claim_tick("other", "daily", 100).await.unwrap());
    // A store one process owns runs every tick it is asked about.
    let memory = troupe_runtime::store::MemoryStore::new();
    assert!(memory.claim_tick("team", "daily", 100).await.unwrap());
    assert!(memory.claim_tick("team", "daily", 100).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_recorded_once_and_a_newer_schema_is_refused() {
    let Some(url) = pg_db::fresh_db("migrate").await else {
        return;
    };
    // Without migrating, an empty database is refused, naming the command.
    let no = PostgresOptions {
        migrate: false,
        ..Default::default()
    };
    let e = PostgresStore::connect_with(&url, &no).await.unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Schema);
    assert!(e.to_string().contains("troupe db migrate"), "{e}");
    let (db, applied, now) = migrate_postgres(&url, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!((applied, now), (vec![1, 2, 3, 4, 5, 6], 6));
    assert!(db.ends_with(&url[url.rfind('/').unwrap()..]), "{db}");
    let (_, again, _) = migrate_postgres(&url, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(again.is_empty());
    PostgresStore::connect_with(&url, &no).await.unwrap();
    // Two stores opening at once apply nothing twice.
    let (x, y) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    x.unwrap();
    y.unwrap();
    pg_db::exec(
        &url,
        "INSERT INTO troupe_migrations (version, name) VALUES (99, 'future')",
    )
    .await;
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Schema);
    assert!(e.to_string().contains("migration 99"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_row_is_corrupt_and_a_delta_chain_loads_in_order() {
    let Some(url) = pg_db::fresh_db("rows").await else {
        return;
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    let cp = Checkpoint::new("run", None, 1, 2, vec![7; 64]);
    store.save(&cp).await.unwrap();
    pg_db::exec(&url, "UPDATE troupe_checkpoints SET payload = '\\x00'").await;
    let e = store.load("run", &cp.id).await.unwrap_err();
    assert!(
        e.is_corrupt() && e.to_string().contains(&cp.id.to_string()),
        "{e}"
    );
    // A whole checkpoint's chain is itself; an unknown id's is empty.
    let whole = Checkpoint::new("r2", None, 1, 2, b"Fwhole".to_vec());
    store.save(&whole).await.unwrap();
    assert_eq!(
        store.chain("r2", &whole.id).await.unwrap(),
        vec![whole.clone()]
    );
    assert!(
        store
            .chain("r2", &troupe_runtime::store::CheckpointId::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_way_of_failing_to_connect_is_named_in_bounded_time_without_the_password() {
    let Some(url) = pg_db::fresh_db("connect").await else {
        return;
    };
    let quick = PostgresOptions {
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let e = PostgresStore::connect("postgres://u:s3cret@[::1:5432/db")
        .await
        .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::BadUrl, "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");

    // A closed port on loopback: refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let e =
        PostgresStore::connect_with(&format!("postgres://u:s3cret@127.0.0.1:{port}/db"), &quick)
            .await
            .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Unreachable, "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");

    // A server that accepts and never answers: the connect timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let _keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let t = Instant::now();
    let e =
        PostgresStore::connect_with(&format!("postgres://u:s3cret@127.0.0.1:{port}/db"), &quick)
            .await
            .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Unreachable, "{e}");
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t.elapsed()
    );

    // An unknown user; a database that does not exist.
    let (base, db) = url.rsplit_once('/').unwrap();
    let host = base.rsplit_once('@').unwrap().1;
    let e = PostgresStore::connect(&format!("postgres://nobody:s3cret@{host}/{db}"))
        .await
        .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Authentication, "{e}");
    assert!(
        !e.to_string().contains("s3cret") && e.to_string().contains("nobody@"),
        "{e}"
    );
    let e = PostgresStore::connect(&format!("{base}/no_such_db_here"))
        .await
        .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::NoDatabase, "{e}");

    // A user who may log in but not create the tables.
    let role = format!("reader_{}", std::process::id());
    pg_db::exec(
        &url,
        &format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC"
        ),
    )
    .await;
    let e = PostgresStore::connect(&format!("postgres://{role}:s3cret@{host}/{db}"))
        .await
        .unwrap_err();
    assert_eq!(failure(&e), PostgresFailure::Permission, "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_results_are_kept_by_key_and_seen_by_another_pool() {
    use troupe_runtime::store::ResultCache;
    let Some(url) = pg_db::fresh_db("node_cache").await else {
        return;
    };
    let a = PostgresStore::connect(&url).await.unwrap();
    let b = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(a.cached("k").await.unwrap(), None);
    a.save_cached("k", b"one").await.unwrap();
    assert_eq!(b.cached("k").await.unwrap().as_deref(), Some(&b"one"[..]));
    b.save_cached("k", b"two").await.unwrap();
    assert_eq!(a.cached("k").await.unwrap().as_deref(), Some(&b"two"[..]));
}
