//! `SqliteStore` copies its WAL into the database as it goes, beside the
//! saves: under a writer that never pauses the WAL file stays bounded —
//! copied whole now and then, it is started over rather than grown.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "sqlite")]

use troupe_runtime::store::{Checkpoint, CheckpointStore, SqliteStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_stays_bounded_under_a_writer_that_never_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cp.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    // 4,800 checkpoints of 12 KiB, one after the other: ~56 MiB
    // committed, ~120 MB of WAL frames (a 12 KiB payload spills over four
    // pages). A WAL never started over holds them all (tried: 125 MB); one
    // started over holds ~4 MiB plus what the writer added while a copy
    // ran beside it (12-14 MB here).
    let mut parent = None;
    for step in 0..4_800u64 {
        let payload = vec![(step % 251) as u8; 12 * 1024];
        let cp = Checkpoint::new("r", parent, step, 7, payload);
        parent = Some(cp.id);
        store.save(&cp).await.unwrap();
    }
    let wal = dir.path().join("cp.sqlite3-wal");
    let size = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(
        size <= 48 << 20,
        "the WAL grew to {size} bytes for ~56 MiB committed"
    );
    // Every checkpoint is there.
    assert_eq!(store.list("r").await.unwrap().len(), 4_800);
}
