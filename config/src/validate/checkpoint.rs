//! `checkpoint:`: a file store has a path, a memory store none.

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
