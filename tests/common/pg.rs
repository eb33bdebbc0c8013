//! A fresh PostgreSQL database per test on the throwaway cluster
//! `.ci/start-postgres.sh` starts (see [`super::prereq::postgres_url`]).

/// A new empty database, its URL; `None` when there is no cluster and
/// skips are allowed (the caller then returns).
pub fn fresh_db(hint: &str) -> Option<String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let url = super::prereq::postgres_url()?;
    let name: String = format!(
        "t_{}_{}_{}",
        hint.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(30)
            .collect::<String>(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
    .to_lowercase();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot reach the test cluster at {url}: {e}"));
        tokio::spawn(conn);
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            client
                .batch_execute(&sql)
                .await
                .expect("create the database");
        }
    });
    let (base, _) = url.rsplit_once('/').expect("a URL with a database");
    Some(format!("{base}/{name}"))
}

/// Runs `sql` on the database at `url` (test setup).
pub fn exec(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client.batch_execute(sql).await.expect("setup statement");
    });
}

/// The first column of the first row of `sql` on the database at `url`,
/// as a number (a test's probe: `SELECT count(*) …`).
pub fn count(url: &str, sql: &str) -> i64 {
    query(url, sql).first().expect("a row").get::<_, i64>(0)
}

/// Every row of `sql` on the database at `url`, each column read as text
/// and the row joined with ", " (a test's report of what it found; cast
/// non-text columns in the query: `pid::text`).
pub fn rows(url: &str, sql: &str) -> Vec<String> {
    query(url, sql)
        .iter()
        .map(|row| {
            (0..row.len())
                .map(|i| row.get::<_, Option<String>>(i).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// The rows of `sql` on the database at `url`, on a connection of its own.
fn query(url: &str, sql: &str) -> Vec<tokio_postgres::Row> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client.query(sql, &[]).await.expect("probe")
    })
}
