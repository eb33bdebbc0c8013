//! `troupe db migrate`: brings a PostgreSQL database to this build's
//! schema (the migrations it lacks, recorded in `troupe_migrations`), so
//! an operator can migrate before starting workers rather than have the
//! first worker do it.

use std::time::Duration;

use super::{FAILED, INVALID, OK};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `troupe db migrate --url URL` (or `$DATABASE_URL`): exit 0 migrated
/// (or up to date), 1 the database failed (unreachable, credentials,
/// permission: named), 2 no URL.
pub(crate) async fn migrate(url: Option<String>) -> u8 {
    let Some(url) = url
        .or_else(|| std::env::var("DATABASE_URL").ok())
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!(
            "troupe: `troupe db migrate` needs the database: --url postgres://user:password@host:5432/dbname (or DATABASE_URL)"
        );
        return INVALID;
    };
    run(&url).await
}

#[cfg(feature = "postgres")]
async fn run(url: &str) -> u8 {
    match troupe::store::migrate_postgres(url, CONNECT_TIMEOUT).await {
        Ok((db, applied, now)) if applied.is_empty() => {
            println!("{db}: up to date (migration {now})");
            OK
        }
        Ok((db, applied, now)) => {
            let list: Vec<String> = applied.iter().map(i32::to_string).collect();
            println!(
                "{db}: applied migration(s) {}; now at migration {now}",
                list.join(", ")
            );
            OK
        }
        Err(e) => {
            eprintln!("troupe: cannot migrate: {e}");
            FAILED
        }
    }
}

#[cfg(not(feature = "postgres"))]
async fn run(_url: &str) -> u8 {
    let _ = (CONNECT_TIMEOUT, OK);
    eprintln!("troupe: this troupe was built without the `postgres` feature");
    FAILED
}
