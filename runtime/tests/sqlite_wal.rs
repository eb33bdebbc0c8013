//! `SqliteStore` copies its WAL into the database when the saves pause,
//! or at a bound when they never do: the WAL is copied whole now and then
//! and started over rather than grown.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "sqlite")]

use std::path::Path;
use std::time::Duration;

use troupe_runtime::store::{Checkpoint, CheckpointId, CheckpointStore, SqliteStore};

/// Saves `count` checkpoints of 12 KiB, one after the other, after `parent`.
async fn save_many(
    store: &SqliteStore,
    count: u64,
    mut parent: Option<CheckpointId>,
) -> Option<CheckpointId> {
    for step in 0..count {
        let payload = vec![(step % 251) as u8; 12 * 1024];
        let cp = Checkpoint::new("r", parent, step, 7, payload);
        parent = Some(cp.id);
        store.save(&cp).await.unwrap();
    }
    parent
}

/// The WAL's checkpoint sequence number (its header's bytes 12..16,
/// big-endian): SQLite counts one up each time it starts the WAL over.
fn wal_generation(db: &Path) -> u32 {
    let bytes = std::fs::read(db.with_extension("sqlite3-wal")).unwrap();
    u32::from_be_bytes(bytes[12..16].try_into().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_stays_bounded_under_a_writer_that_never_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cp.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    // 7,200 checkpoints of 12 KiB, one after the other: ~84 MiB
    // committed, ~178 MB of WAL frames (a 12 KiB payload spills over four
    // pages, and its row's leaves are two more). A WAL never started over
    // holds them all; one copied at its 64 MiB bound and started over
    // holds 64 MiB plus what the writer added while the copy ran.
    save_many(&store, 7_200, None).await;
    let wal = dir.path().join("cp.sqlite3-wal");
    let size = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(
        size <= 112 << 20,
        "the WAL grew to {size} bytes for ~178 MB of frames committed"
    );
    // Every checkpoint is there.
    assert_eq!(store.list("r").await.unwrap().len(), 7_200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_copy_is_made_when_the_saves_pause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cp.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    // ~6 MB of frames: a copy is due, and waits while the saves go on.
    let last = save_many(&store, 240, None).await;
    let before = wal_generation(&path);
    // Pauses, each followed by a commit: the copy is made in the first,
    // and the commit after it starts the WAL over.
    let mut last = last;
    let mut saved = 240;
    while wal_generation(&path) == before {
        assert!(saved < 400, "the WAL was never started over");
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = save_many(&store, 1, last).await;
        saved += 1;
    }
    assert_eq!(store.list("r").await.unwrap().len(), saved);
}
