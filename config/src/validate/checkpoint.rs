//! `checkpoint:`: a file store has a path, a PostgreSQL store a url, a
//! memory store neither.

use super::checker::{Checker, at_least_one, p};
use crate::schema::{CheckpointSpec, DurabilitySpec, StoreKind};

/// Checks the checkpoint section.
pub(super) fn check_checkpoint(c: &mut Checker<'_>, cp: &CheckpointSpec) {
    let base = p(&["checkpoint"]);
    match (cp.store, &cp.path) {
        (StoreKind::Dir | StoreKind::Sqlite, None) => c.error(
            &base,
            "a `dir` or `sqlite` store needs a `path`",
            Some("`path:` (relative to the config file)".into()),
        ),
        (StoreKind::Dir | StoreKind::Sqlite, Some(path)) if path.trim().is_empty() => c.error(
            &base.key("path"),
            "an empty `path`: a `dir` or `sqlite` store needs a directory or file to keep checkpoints in (SQLite would keep them in a temporary database, thrown away at exit)",
            Some("a path such as `runs.db` or `state/` (relative to the config file)".into()),
        ),
        (StoreKind::Memory, Some(_)) => c.error(
            &base.key("path"),
            "a `memory` store has no path",
            Some("`store: dir` or `store: sqlite` to keep checkpoints in a file".into()),
        ),
        _ => {}
    }
    match (cp.store, &cp.url) {
        (StoreKind::Postgres, None) => c.error(
            &base,
            "a `postgres` store needs a `url`",
            Some("`url: ${DATABASE_URL}` (postgres://user:password@host:5432/dbname)".into()),
        ),
        (StoreKind::Postgres, Some(url)) if url.trim().is_empty() => c.error(
            &base.key("url"),
            "an empty `url`: a `postgres` store needs the database to connect to",
            Some("`url: ${DATABASE_URL}` (postgres://user:password@host:5432/dbname)".into()),
        ),
        (StoreKind::Postgres, Some(_)) if cp.path.is_some() => c.error(
            &base.key("path"),
            "a `postgres` store has no path: it is named by its `url`",
            Some("`url:` alone".into()),
        ),
        (StoreKind::Memory | StoreKind::Dir | StoreKind::Sqlite, Some(_)) => c.error(
            &base.key("url"),
            "only a `postgres` store has a `url`",
            Some("`store: postgres`, or `path:` for a `dir` or `sqlite` store".into()),
        ),
        _ => {}
    }
    if cp.store == StoreKind::Memory && cp.durability == Some(DurabilitySpec::Fsync) {
        c.error(
            &base.key("durability"),
            "a `memory` store cannot flush checkpoints to a disk (`durability: fsync`)",
            Some("`store: dir` or `store: sqlite`, or `durability: process`".into()),
        );
    }
    if cp.every == Some(0) {
        at_least_one(c, &base.key("every"));
    }
    if cp.retention.as_ref().and_then(|r| r.checkpoints) == Some(0) {
        at_least_one(c, &base.key("retention").key("checkpoints"));
    }
}
