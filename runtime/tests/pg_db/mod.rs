//! A fresh PostgreSQL database per test, on the throwaway cluster
//! `.ci/start-postgres.sh` starts (its URL in `$TROUPE_PG_URL` or
//! `target/pg/url`). Without one the test fails saying how to start it,
//! or, with `TROUPE_ALLOW_SKIP=1` outside CI, skips loudly.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

/// The cluster's URL, if one was started.
pub fn server_url() -> Option<String> {
    if let Ok(url) = std::env::var("TROUPE_PG_URL") {
        return Some(url);
    }
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pg/url");
    std::fs::read_to_string(file)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A new empty database on the cluster, its URL; `None` when there is no
/// cluster and skips are allowed.
pub async fn fresh_db(hint: &str) -> Option<String> {
    let Some(url) = server_url() else {
        let set = |n: &str| std::env::var(n).is_ok_and(|v| v == "1" || v == "true");
        assert!(
            set("TROUPE_ALLOW_SKIP") && !set("CI"),
            "prerequisite missing: no PostgreSQL cluster (no $TROUPE_PG_URL, no target/pg/url). \
             Start one with `.ci/start-postgres.sh`, or set TROUPE_ALLOW_SKIP=1 to skip this test"
        );
        eprintln!(
            "SKIPPED (TROUPE_ALLOW_SKIP=1): no PostgreSQL cluster; start one with `.ci/start-postgres.sh`"
        );
        return None;
    };
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t_{}_{}_{}",
        hint.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(30)
            .collect::<String>(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
    .to_lowercase();
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test cluster at {url}: {e}"));
    tokio::spawn(conn);
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        client.batch_execute(&sql).await.unwrap();
    }
    let (base, _) = url.rsplit_once('/').unwrap();
    Some(format!("{base}/{name}"))
}

/// A statement on the database at `url`, for setting up a test.
pub async fn exec(url: &str, sql: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client.batch_execute(sql).await.unwrap();
}
