//! The store conformance suite, run on every store, and the file store's
//! own guarantees: damage is reported naming the file, no temporary file
//! survives a save, concurrent saves do not interfere.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

#[cfg(feature = "postgres")]
use troupe_runtime::store::PostgresStore;
#[cfg(feature = "sqlite")]
use troupe_runtime::store::SqliteStore;
use troupe_runtime::store::{
    Checkpoint, CheckpointId, CheckpointStore, FileStore, MemoryStore, StoreError, ThreadStore,
};
use troupe_runtime::{Message, Thread, WorkflowState};

// ---------------------------------------------------------------------------
// The conformance suite: what every store must do.
// ---------------------------------------------------------------------------

async fn conformance<S: CheckpointStore + ThreadStore>(store: S) {
    empty_store(&store).await;
    checkpoints(&store).await;
    threads(&store).await;
    invalid_ids(&store).await;
}

async fn empty_store<S: CheckpointStore + ThreadStore>(store: &S) {
    assert!(store.runs().await.unwrap().is_empty());
    assert!(store.conversations().await.unwrap().is_empty());
    assert_eq!(store.latest("nope").await.unwrap(), None);
    assert!(store.list("nope").await.unwrap().is_empty());
    assert_eq!(
        store.load("nope", &CheckpointId::new()).await.unwrap(),
        None
    );
    assert!(!store.delete("nope", &CheckpointId::new()).await.unwrap());
    assert_eq!(store.prune("nope", 0).await.unwrap(), 0);
    assert_eq!(store.load_thread("nope").await.unwrap(), None);
    assert!(!store.delete_thread("nope").await.unwrap());
}

/// A chain of checkpoints of `run`, each with a distinct payload.
fn chain(run: &str, n: usize) -> Vec<Checkpoint> {
    let mut out: Vec<Checkpoint> = Vec::new();
    for step in 0..n {
        let payload = format!("{run} state after superstep {step}").into_bytes();
        out.push(Checkpoint::new(
            run,
            out.last().map(|c| c.id),
            step as u64,
            0xdead_beef_0000_0000 | step as u64,
            payload,
        ));
    }
    out
}

async fn checkpoints<S: CheckpointStore>(store: &S) {
    let a = chain("run-a", 5);
    let b = chain("run-b", 2);
    // Saved out of order: listing must still be by creation.
    for cp in a.iter().rev().chain(&b) {
        store.save(cp).await.unwrap();
    }

    for cp in a.iter().chain(&b) {
        assert_eq!(
            store.load(&cp.run_id, &cp.id).await.unwrap().as_ref(),
            Some(cp)
        );
    }
    assert_eq!(store.latest("run-a").await.unwrap().as_ref(), a.last());
    assert_eq!(store.latest("run-b").await.unwrap().as_ref(), b.last());
    let listed = store.list("run-a").await.unwrap();
    assert_eq!(listed, a.iter().map(Checkpoint::meta).collect::<Vec<_>>());
    assert_eq!(store.runs().await.unwrap(), ["run-a", "run-b"]);
    // Runs are kept apart.
    assert_eq!(store.load("run-a", &b[0].id).await.unwrap(), None);

    // Saving an id again replaces it.
    let mut replaced = a[2].clone();
    replaced.payload = b"replaced".to_vec();
    replaced.checksum = troupe_runtime::store::checksum(&replaced.payload);
    store.save(&replaced).await.unwrap();
    assert_eq!(store.load("run-a", &a[2].id).await.unwrap(), Some(replaced));
    assert_eq!(store.list("run-a").await.unwrap().len(), 5);

    // A checkpoint whose checksum does not match is kept as given and
    // reported when loaded; it can be listed and deleted.
    let mut bad = Checkpoint::new("run-d", None, 9, 9, b"x".to_vec());
    bad.payload[0] ^= 1;
    store.save(&bad).await.unwrap();
    assert!(store.load("run-d", &bad.id).await.unwrap_err().is_corrupt());
    assert!(store.latest("run-d").await.unwrap_err().is_corrupt());
    assert_eq!(store.list("run-d").await.unwrap(), [bad.meta()]);
    assert!(store.delete("run-d", &bad.id).await.unwrap());

    // Empty and large payloads survive byte for byte.
    let empty = Checkpoint::new("run-c", None, 0, 0, Vec::new());
    let large = Checkpoint::new(
        "run-c",
        Some(empty.id),
        1,
        0,
        (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect(),
    );
    store.save(&empty).await.unwrap();
    store.save(&large).await.unwrap();
    assert_eq!(
        store.load("run-c", &empty.id).await.unwrap(),
        Some(empty.clone())
    );
    assert_eq!(store.latest("run-c").await.unwrap(), Some(large.clone()));
    assert_eq!(store.list("run-c").await.unwrap()[1].payload_len, 1 << 20);

    // Delete.
    assert!(store.delete("run-a", &a[1].id).await.unwrap());
    assert!(!store.delete("run-a", &a[1].id).await.unwrap());
    assert_eq!(store.load("run-a", &a[1].id).await.unwrap(), None);
    let ids: Vec<_> = store
        .list("run-a")
        .await
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, [a[0].id, a[2].id, a[3].id, a[4].id]);

    // Prune keeps the newest K.
    assert_eq!(store.prune("run-a", 2).await.unwrap(), 2);
    let ids: Vec<_> = store
        .list("run-a")
        .await
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, [a[3].id, a[4].id]);
    assert_eq!(store.prune("run-a", 5).await.unwrap(), 0);
    assert_eq!(store.latest("run-a").await.unwrap().as_ref(), a.last());
    assert_eq!(store.prune("run-a", 0).await.unwrap(), 2);
    assert_eq!(store.latest("run-a").await.unwrap(), None);
    assert_eq!(store.runs().await.unwrap(), ["run-b", "run-c"]);

    // Clean up for the thread tests' `runs`-free view.
    store.prune("run-b", 0).await.unwrap();
    store.prune("run-c", 0).await.unwrap();
    assert!(store.runs().await.unwrap().is_empty());
}

fn rich_thread() -> Thread {
    let mut t = Thread::from_messages([Message::user("hello"), Message::text("bot", "hi there")]);
    t.children_mut().insert(
        "bot".into(),
        Box::new(Thread::from_messages([
            Message::user("hello"),
            Message::structured("bot", r#"{"a":1}"#),
        ])),
    );
    *t.state_mut() = Some(WorkflowState {
        consumed: 2,
        turns: 1,
        last_speaker: Some("bot".into()),
        ..Default::default()
    });
    t
}

async fn threads<S: ThreadStore>(store: &S) {
    let first = rich_thread();
    store.save_thread("c1", &first).await.unwrap();
    assert_eq!(store.load_thread("c1").await.unwrap(), Some(first.clone()));

    // Overwrite.
    let mut longer = first.clone();
    longer.push(Message::user("and again"));
    store.save_thread("c1", &longer).await.unwrap();
    let back = store.load_thread("c1").await.unwrap().unwrap();
    assert_eq!(back, longer);
    // Ids survive: a message already there is not added twice.
    let mut back = back;
    assert!(!back.push(longer.messages()[0].as_ref().clone()));

    store.save_thread("c2", &Thread::new()).await.unwrap();
    assert_eq!(store.load_thread("c2").await.unwrap(), Some(Thread::new()));
    store.save_thread("user@example.com", &first).await.unwrap();
    assert_eq!(
        store.conversations().await.unwrap(),
        ["c1", "c2", "user@example.com"]
    );

    assert!(store.delete_thread("c1").await.unwrap());
    assert!(!store.delete_thread("c1").await.unwrap());
    assert_eq!(store.load_thread("c1").await.unwrap(), None);
    assert_eq!(
        store.conversations().await.unwrap(),
        ["c2", "user@example.com"]
    );
    assert!(store.delete_thread("c2").await.unwrap());
    assert!(store.delete_thread("user@example.com").await.unwrap());
    assert!(store.conversations().await.unwrap().is_empty());
}

async fn invalid_ids<S: CheckpointStore + ThreadStore>(store: &S) {
    let invalid = |e: StoreError| matches!(e, StoreError::InvalidId { .. });
    for bad in ["", "a/b", "a\\b", "..", ".hidden", "a\nb"] {
        assert!(
            invalid(store.load_thread(bad).await.unwrap_err()),
            "{bad:?}"
        );
        assert!(invalid(
            store.save_thread(bad, &Thread::new()).await.unwrap_err()
        ));
        assert!(invalid(store.delete_thread(bad).await.unwrap_err()));
        let cp = Checkpoint::new(bad, None, 0, 0, vec![1]);
        assert!(invalid(store.save(&cp).await.unwrap_err()), "{bad:?}");
        assert!(invalid(store.list(bad).await.unwrap_err()));
        assert!(invalid(store.latest(bad).await.unwrap_err()));
    }
    let e = store.load_thread("a/b").await.unwrap_err().to_string();
    assert!(e.contains("conversation id") && e.contains("a/b"), "{e}");
    assert!(store.conversations().await.unwrap().is_empty());
    assert!(store.runs().await.unwrap().is_empty());
}

#[tokio::test]
async fn memory_store_conforms() {
    conformance(MemoryStore::new()).await;
}

#[tokio::test]
async fn shared_store_conforms() {
    conformance(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(FileStore::open(dir.path()).unwrap()).await;
    assert_no_temp_files(dir.path());
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_in_memory_conforms() {
    conformance(SqliteStore::in_memory().unwrap()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_on_disk_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(SqliteStore::open(dir.path().join("troupe.db")).unwrap()).await;
}

#[cfg(feature = "postgres")]
mod pg_db;

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    let Some(url) = pg_db::fresh_db("conforms").await else {
        return;
    };
    conformance(PostgresStore::connect(&url).await.unwrap()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_survives_reopening() {
    let Some(url) = pg_db::fresh_db("reopen").await else {
        return;
    };
    // Each open is a new pool, as another process would make.
    let first = PostgresStore::connect(&url).await.unwrap();
    let again = PostgresStore::connect(&url).await.unwrap();
    let stores = [first, again];
    let n = std::sync::atomic::AtomicUsize::new(0);
    survives_reopen(|| stores[n.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2].clone())
        .await;
}

// ---------------------------------------------------------------------------
// Persistence across reopening.
// ---------------------------------------------------------------------------

async fn survives_reopen<S: CheckpointStore + ThreadStore>(open: impl Fn() -> S) {
    let cps = chain("r", 3);
    let thread = rich_thread();
    {
        let store = open();
        for cp in &cps {
            store.save(cp).await.unwrap();
        }
        store.save_thread("c", &thread).await.unwrap();
    }
    let store = open();
    assert_eq!(store.latest("r").await.unwrap().as_ref(), cps.last());
    assert_eq!(store.list("r").await.unwrap().len(), 3);
    assert_eq!(store.load_thread("c").await.unwrap(), Some(thread));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_store_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    survives_reopen(|| FileStore::open(dir.path()).unwrap()).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    survives_reopen(|| SqliteStore::open(&db).unwrap()).await;
}

// ---------------------------------------------------------------------------
// The file store's own guarantees.
// ---------------------------------------------------------------------------

fn assert_no_temp_files(root: &Path) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                !name.starts_with('.') && !name.contains(".tmp"),
                "temporary file left behind: {}",
                entry.path().display()
            );
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
}

/// The error names the damaged file.
fn assert_corrupt_naming(e: StoreError, path: &Path) {
    assert!(e.is_corrupt(), "expected Corrupt, got {e}");
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
}

#[tokio::test]
async fn a_torn_record_at_the_end_of_a_log_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let a = Checkpoint::new("run", None, 1, 1, vec![42; 4096]);
    store.save(&a).await.unwrap();
    let path = store.log_path("run");
    let after_a = std::fs::metadata(&path).unwrap().len();
    let b = Checkpoint::new("run", Some(a.id), 2, 1, vec![43; 4096]);
    store.save(&b).await.unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(store.latest("run").await.unwrap(), Some(b.clone()));

    // The process died while appending b: the log ends with a.
    for cut in [len - 1, (after_a + len) / 2, after_a + 3, after_a] {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut)
            .unwrap();
        assert_eq!(
            store.latest("run").await.unwrap(),
            Some(a.clone()),
            "cut {cut}"
        );
        assert_eq!(store.list("run").await.unwrap(), vec![a.meta()]);
        assert_eq!(store.load("run", &b.id).await.unwrap(), None);
    }
    // Saving again appends after the cut: nothing of the torn record stays.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(after_a)
        .unwrap();
    store.save(&b).await.unwrap();
    assert_eq!(store.latest("run").await.unwrap(), Some(b));
}

#[tokio::test]
async fn a_flipped_byte_inside_a_log_ends_it_there_is_reported_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let a = Checkpoint::new("run", None, 1, 1, b"some encoded run state".to_vec());
    let b = Checkpoint::new("run", Some(a.id), 2, 1, b"more encoded run state".to_vec());
    let c = Checkpoint::new("run", Some(b.id), 3, 1, b"yet more run state".to_vec());
    store.save(&a).await.unwrap();
    let after_a = std::fs::metadata(store.log_path("run")).unwrap().len() as usize;
    store.save(&b).await.unwrap();
    store.save(&c).await.unwrap();
    let path = store.log_path("run");
    let good = std::fs::read(&path).unwrap();

    // The magic bytes, a's record (followed by others: not a torn tail):
    // nothing can be read, the run is still listed, its damage named.
    for at in [0, 12, 30] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        assert_eq!(store.load("run", &a.id).await.unwrap(), None, "{at}");
        assert_eq!(store.latest("run").await.unwrap(), None);
        assert!(store.list("run").await.unwrap().is_empty());
        assert_eq!(store.runs().await.unwrap(), vec!["run".to_string()]);
        let damage = store.damage("run").await.unwrap().unwrap();
        assert!(damage.contains(&path.display().to_string()), "{damage}");
        // Nothing readable to prune: the log is left as it is.
        assert_eq!(store.prune("run", 0).await.unwrap(), 0);
        assert_eq!(std::fs::read(&path).unwrap(), bad);
    }
    // b damaged: a stays readable, the newest checkpoint there is.
    let mut bad = good.clone();
    bad[after_a + 12] ^= 0x10;
    std::fs::write(&path, &bad).unwrap();
    assert_eq!(store.latest("run").await.unwrap(), Some(a.clone()));
    assert_eq!(store.list("run").await.unwrap(), vec![a.meta()]);
    let damage = store.damage("run").await.unwrap().unwrap();
    assert!(damage.contains(&format!("byte {after_a}")), "{damage}");
    // A damaged log is not rewritten by a prune (its bytes would go).
    assert_corrupt_naming(store.prune("run", 0).await.unwrap_err(), &path);
    // The repair keeps a copy of the damaged log and cuts it after a.
    let repaired = store.repair("run").await.unwrap().unwrap();
    assert!(
        repaired.contains("dropped") && repaired.contains("damaged log is kept as"),
        "{repaired}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, after_a);
    let copies: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("checkpoints.log.damaged-"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(store.damage("run").await.unwrap(), None);
    assert_eq!(store.repair("run").await.unwrap(), None);
    // Saved after the repair, c is found again.
    store.save(&c).await.unwrap();
    assert_eq!(store.latest("run").await.unwrap(), Some(c));
    assert_eq!(store.list("run").await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_save_after_a_torn_tail_goes_after_the_last_whole_record() {
    // Another process (killed mid-append) left the tail: this store has
    // never appended here, so it checks the log first.
    let dir = tempfile::tempdir().unwrap();
    let a = Checkpoint::new("run", None, 1, 1, vec![1; 1000]);
    let b = Checkpoint::new("run", Some(a.id), 2, 1, vec![2; 1000]);
    let c = Checkpoint::new("run", Some(b.id), 3, 1, vec![3; 1000]);
    let path = {
        let first = FileStore::open(dir.path()).unwrap();
        first.save(&a).await.unwrap();
        first.save(&b).await.unwrap();
        first.log_path("run")
    };
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 7)
        .unwrap();
    let second = FileStore::open(dir.path()).unwrap();
    second.save(&c).await.unwrap();
    let ids: Vec<_> = second
        .list("run")
        .await
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, vec![a.id, c.id]);
    assert_eq!(second.latest("run").await.unwrap(), Some(c));
    assert_eq!(second.damage("run").await.unwrap(), None);
}

#[test]
fn verify_catches_a_payload_byte_flip() {
    let mut cp = Checkpoint::new("run", None, 3, 4, vec![0u8; 256]);
    cp.verify().unwrap();
    for i in [0, 17, 255] {
        cp.payload[i] ^= 0x01;
        let e = cp.verify().unwrap_err();
        assert!(e.is_corrupt() && e.to_string().contains("'run'"), "{e}");
        cp.payload[i] ^= 0x01;
    }
    cp.verify().unwrap();
}

#[tokio::test]
async fn a_damaged_thread_file_is_corrupt_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    store.save_thread("chat", &rich_thread()).await.unwrap();
    let path = store.thread_path("chat");
    let good = std::fs::read(&path).unwrap();

    std::fs::write(&path, &good[..good.len() - 3]).unwrap();
    assert_corrupt_naming(store.load_thread("chat").await.unwrap_err(), &path);
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x04;
    std::fs::write(&path, &flipped).unwrap();
    assert_corrupt_naming(store.load_thread("chat").await.unwrap_err(), &path);
    std::fs::write(&path, b"").unwrap();
    assert_corrupt_naming(store.load_thread("chat").await.unwrap_err(), &path);
}

#[tokio::test]
async fn a_checkpoint_log_moved_to_another_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let cp = Checkpoint::new("one", None, 1, 1, vec![1, 2, 3]);
    store.save(&cp).await.unwrap();
    let other = Checkpoint::new("two", None, 1, 1, vec![4]);
    store.save(&other).await.unwrap();
    let moved = store.log_path("two");
    std::fs::copy(store.log_path("one"), &moved).unwrap();
    let e = store.load("two", &cp.id).await.unwrap_err();
    assert_corrupt_naming(e, &moved);
}

#[tokio::test]
async fn foreign_and_hidden_files_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let cp = Checkpoint::new("run", None, 1, 1, vec![1]);
    store.save(&cp).await.unwrap();
    store.save_thread("chat", &Thread::new()).await.unwrap();
    let run_dir = store.run_dir("run");
    std::fs::write(run_dir.join("README.txt"), "notes").unwrap();
    std::fs::write(run_dir.join(".half-written.ckpt.tmp-1-1"), "x").unwrap();
    std::fs::write(dir.path().join("threads").join(".x.thread.tmp-1-1"), "x").unwrap();
    std::fs::create_dir(dir.path().join("checkpoints").join("empty-run")).unwrap();
    assert_eq!(store.list("run").await.unwrap(), [cp.meta()]);
    assert_eq!(store.runs().await.unwrap(), ["run"]);
    assert_eq!(store.conversations().await.unwrap(), ["chat"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_of_different_runs_do_not_interfere() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let run = format!("run-{t}");
                let cps = chain(&run, 8);
                for cp in &cps {
                    store.save(cp).await.unwrap();
                }
                store
                    .save_thread(
                        &format!("chat-{t}"),
                        &Thread::from_messages([Message::user(run)]),
                    )
                    .await
                    .unwrap();
                cps
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.unwrap());
    }
    assert_eq!(store.runs().await.unwrap().len(), 16);
    assert_eq!(store.conversations().await.unwrap().len(), 16);
    for cps in &all {
        let run = &cps[0].run_id;
        let listed: Vec<_> = store
            .list(run)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(listed, cps.iter().map(|c| c.id).collect::<Vec<_>>());
        assert_eq!(store.latest(run).await.unwrap().as_ref(), cps.last());
    }
    assert_no_temp_files(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_of_one_conversation_leave_one_whole_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let threads: Vec<Thread> = (0..8)
        .map(|i| Thread::from_messages((0..=i).map(|j| Message::user(format!("m{j}")))))
        .collect();
    let tasks: Vec<_> = threads
        .iter()
        .cloned()
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move { store.save_thread("same", &t).await.unwrap() })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let back = store.load_thread("same").await.unwrap().unwrap();
    assert!(threads.contains(&back), "a mix of two writes was read");
    assert_no_temp_files(dir.path());
}
