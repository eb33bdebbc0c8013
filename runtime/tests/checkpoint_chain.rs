//! Checkpoints as chains of deltas (format 5 on): a chain resumes as its
//! folded whole would, pruning and deleting keep chains loadable, the
//! memory store's history is bounded, durability is a choice, damage is
//! caught, and runs written by formats 4 and 5 still resume.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
#[cfg(feature = "sqlite")]
use troupe_runtime::store::SqliteStore;
use troupe_runtime::store::{
    CheckpointKind, CheckpointStore, Durability, FileStore, MemoryStore, load_whole,
};
use troupe_runtime::{
    Event, FnAgent, Graph, RouterBuilder, RunContext, RunResult, StopCondition, Thread, Workflow,
};

mod common;
use common::{content, guard};

/// An agent whose answer depends only on its thread.
fn node(name: &str) -> FnAgent {
    let n = name.to_string();
    FnAgent::sync(name, move |t: &Thread| {
        let digest: usize = t.messages().iter().map(|m| m.text_content().len()).sum();
        Ok(format!("{n} saw {} ({digest})", t.len()))
    })
}

/// A ring of `agents` that broadcast to each other until `messages`
/// messages, as `RoundRobinGroupChat` builds it: every message enters
/// every agent's thread.
fn ring(agents: usize, messages: u64, store: Option<Arc<dyn CheckpointStore>>) -> Workflow {
    let names: Vec<String> = (0..agents).map(|i| format!("m{i}")).collect();
    let mut g = Graph::builder()
        .start(names[0].clone())
        .loop_limit(u32::MAX);
    for n in &names {
        g = g.add_agent(node(n));
    }
    for (i, from) in names.iter().enumerate() {
        g = g.add_edge(from.clone(), names[(i + 1) % agents].clone());
    }
    let mut w = Workflow::builder()
        .name("ring")
        .graph(g.build().unwrap())
        .router(RouterBuilder::default())
        .stop_condition(StopCondition::max_messages(messages));
    if let Some(s) = store {
        w = w.checkpoint_store(s);
    }
    w.build().unwrap()
}

async fn resume(
    store: &dyn CheckpointStore,
    run: &str,
    id: Option<troupe_runtime::store::CheckpointId>,
    agents: usize,
    messages: u64,
) -> RunResult {
    guard(ring(agents, messages, None).run_from_checkpoint(store, run, id, &RunContext::new()))
        .await
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn a_delta_chain_resumes_as_its_folded_whole(agents in 2usize..5, messages in 3u64..14) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Arc::new(MemoryStore::new().keep_last(usize::MAX));
            let whole = guard(ring(agents, messages, Some(store.clone()))
                .run_task("go", &RunContext::new().with_run_id("r")))
                .await
                .unwrap();
            let metas = store.list("r").await.unwrap();
            prop_assert!(metas.len() >= 2);
            let mut deltas = 0;
            for (i, meta) in metas.iter().enumerate() {
                let cp = store.load("r", &meta.id).await.unwrap().unwrap();
                // The first is whole; later ones deltas, but for a whole
                // one again once the deltas outgrow the last.
                if i == 0 {
                    prop_assert_eq!(cp.kind(), CheckpointKind::Full);
                }
                deltas += usize::from(cp.kind() == CheckpointKind::Delta);
                let from_chain = resume(store.as_ref(), "r", Some(meta.id), agents, messages).await;
                // The same checkpoint folded, alone in a store.
                let folded = load_whole(store.as_ref(), "r", Some(meta.id)).await.unwrap().unwrap();
                prop_assert_eq!(folded.kind(), CheckpointKind::Full);
                prop_assert_eq!(folded.id, meta.id);
                let alone = MemoryStore::new();
                alone.save(&folded).await.unwrap();
                let from_whole = resume(&alone, "r", None, agents, messages).await;
                prop_assert_eq!(content(&from_chain.thread), content(&from_whole.thread));
                prop_assert_eq!(content(&from_chain.thread), content(&whole.thread));
                prop_assert_eq!(&from_chain.status, &whole.status);
            }
            prop_assert!(deltas * 2 >= metas.len(), "{} deltas of {}", deltas, metas.len());
            Ok(())
        })?;
    }
}

/// A run of 20 messages in `store` under run id "r"; its result.
async fn twenty(store: Arc<dyn CheckpointStore>) -> RunResult {
    guard(ring(3, 20, Some(store)).run_task("go", &RunContext::new().with_run_id("r")))
        .await
        .unwrap()
}

/// Every checkpoint left in `store` resumes to `expected`'s content.
async fn all_resume_to(store: &dyn CheckpointStore, expected: &RunResult) {
    let metas = store.list("r").await.unwrap();
    assert!(!metas.is_empty());
    for meta in metas {
        let r = resume(store, "r", Some(meta.id), 3, 20).await;
        assert_eq!(content(&r.thread), content(&expected.thread));
    }
}

async fn pruning_and_deleting_keep_chains_loadable(store: Arc<dyn CheckpointStore>) {
    let whole = twenty(store.clone()).await;
    let metas = store.list("r").await.unwrap();
    assert!(metas.len() > 10, "{}", metas.len());
    // Delete one in the middle: the delta after it is made whole first.
    let middle = metas[metas.len() / 2].id;
    assert!(store.delete("r", &middle).await.unwrap());
    let next = metas[metas.len() / 2 + 1].id;
    let after = store.load("r", &next).await.unwrap().unwrap();
    assert_eq!(after.kind(), CheckpointKind::Full);
    all_resume_to(store.as_ref(), &whole).await;
    // Prune to the newest 3: the oldest kept is whole.
    store.prune("r", 3).await.unwrap();
    let left = store.list("r").await.unwrap();
    assert_eq!(left.len(), 3);
    let oldest = store.load("r", &left[0].id).await.unwrap().unwrap();
    assert_eq!(oldest.kind(), CheckpointKind::Full);
    all_resume_to(store.as_ref(), &whole).await;
}

#[tokio::test]
async fn pruning_and_deleting_keep_chains_loadable_in_every_store() {
    pruning_and_deleting_keep_chains_loadable(Arc::new(MemoryStore::new())).await;
    let dir = tempfile::tempdir().unwrap();
    pruning_and_deleting_keep_chains_loadable(Arc::new(FileStore::open(dir.path()).unwrap())).await;
    #[cfg(feature = "sqlite")]
    pruning_and_deleting_keep_chains_loadable(Arc::new(
        SqliteStore::open(dir.path().join("db.sqlite3")).unwrap(),
    ))
    .await;
}

#[tokio::test]
async fn the_memory_store_keeps_a_bounded_history() {
    let store = Arc::new(MemoryStore::new().keep_last(4));
    let whole =
        guard(ring(3, 40, Some(store.clone())).run_task("go", &RunContext::new().with_run_id("r")))
            .await
            .unwrap();
    let metas = store.list("r").await.unwrap();
    assert!((4..8).contains(&metas.len()), "{} kept", metas.len());
    // The oldest listed loads: its chain, back to its base, is held.
    let oldest = load_whole(store.as_ref(), "r", Some(metas[0].id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(oldest.kind(), CheckpointKind::Full);
    let chain = store.chain("r", &metas[0].id).await.unwrap();
    assert_eq!(chain[0].kind(), CheckpointKind::Full);
    for meta in &metas {
        let r = resume(store.as_ref(), "r", Some(meta.id), 3, 40).await;
        assert_eq!(content(&r.thread), content(&whole.thread));
    }
    // Pruning makes the oldest kept whole and lets the rest go.
    assert_eq!(store.prune("r", 2).await.unwrap(), metas.len() - 2);
    let left = store.list("r").await.unwrap();
    assert_eq!(store.chain("r", &left[0].id).await.unwrap().len(), 1);
    let r = resume(store.as_ref(), "r", Some(left[0].id), 3, 40).await;
    assert_eq!(content(&r.thread), content(&whole.thread));
}

/// A long run writes a whole checkpoint again once its deltas outgrow the
/// last one: a load folds a bounded chain, and every checkpoint resumes.
#[tokio::test]
async fn a_long_run_compacts_its_chain() {
    let store = Arc::new(MemoryStore::new().keep_last(usize::MAX));
    let whole = guard(
        ring(3, 300, Some(store.clone())).run_task("go", &RunContext::new().with_run_id("r")),
    )
    .await
    .unwrap();
    let metas = store.list("r").await.unwrap();
    let mut wholes = 0;
    let mut longest = 0;
    for meta in &metas {
        let cp = store.load("r", &meta.id).await.unwrap().unwrap();
        wholes += usize::from(cp.kind() == CheckpointKind::Full);
        longest = longest.max(store.chain("r", &meta.id).await.unwrap().len());
    }
    assert!(wholes >= 3, "{wholes} whole checkpoints of {}", metas.len());
    assert!(
        longest < metas.len() / 2,
        "a chain of {longest} of {}",
        metas.len()
    );
    let last = metas.last().unwrap().id;
    let r = resume(store.as_ref(), "r", Some(last), 3, 300).await;
    assert_eq!(content(&r.thread), content(&whole.thread));
}

/// How many checkpoints a run of 12 messages saves into `store`, with the
/// workflow's durability `durability` if given.
async fn saved(store: Arc<dyn CheckpointStore>, durability: Option<Durability>) -> usize {
    let names = ["a", "b", "c"];
    let mut g = Graph::builder().start("a").loop_limit(u32::MAX);
    for n in names {
        g = g.add_agent(node(n));
    }
    g = g.add_edge("a", "b").add_edge("b", "c").add_edge("c", "a");
    let mut w = Workflow::builder()
        .name("ring")
        .graph(g.build().unwrap())
        .router(RouterBuilder::default())
        .stop_condition(StopCondition::max_messages(12))
        .checkpoint_store(store.clone());
    if let Some(d) = durability {
        w = w.checkpoint_durability(d);
    }
    let (ctx, mut events) = RunContext::stream();
    guard(w.build().unwrap().run_task("go", &ctx.with_run_id("r")))
        .await
        .unwrap();
    drop(ctx);
    let saves = events
        .drain_ready()
        .into_iter()
        .filter(|e| matches!(&e.event, Event::CheckpointSaved { .. }))
        .count();
    assert_eq!(store.list("r").await.unwrap().len(), saves);
    saves
}

#[tokio::test]
async fn exit_durability_checkpoints_only_when_the_run_stops() {
    let every = saved(Arc::new(MemoryStore::new()), None).await;
    assert!(every > 5, "{every}");
    assert_eq!(
        saved(Arc::new(MemoryStore::new()), Some(Durability::Exit)).await,
        1
    );
    let dir = tempfile::tempdir().unwrap();
    let exit = FileStore::open(dir.path().join("exit"))
        .unwrap()
        .with_durability(Durability::Exit);
    assert_eq!(exit.durability(), Durability::Exit);
    assert_eq!(saved(Arc::new(exit.clone()), None).await, 1);
    // The one checkpoint says how the run ended, and resumes to it.
    let last = load_whole(&exit, "r", None).await.unwrap().unwrap();
    assert_eq!(last.kind(), CheckpointKind::Full);
    // The workflow's choice overrides the store's.
    let exit = FileStore::open(dir.path().join("again"))
        .unwrap()
        .with_durability(Durability::Exit);
    assert_eq!(
        saved(Arc::new(exit), Some(Durability::Process)).await,
        every
    );
}

#[tokio::test]
async fn fsync_durability_saves_every_superstep() {
    let dir = tempfile::tempdir().unwrap();
    let every = saved(Arc::new(MemoryStore::new()), None).await;
    let fsync = FileStore::open(dir.path())
        .unwrap()
        .with_durability(Durability::Fsync);
    assert_eq!(saved(Arc::new(fsync), None).await, every);
    #[cfg(feature = "sqlite")]
    {
        let db = SqliteStore::open(dir.path().join("db.sqlite3"))
            .unwrap()
            .with_durability(Durability::Fsync)
            .unwrap();
        assert_eq!(db.durability(), Durability::Fsync);
        assert_eq!(saved(Arc::new(db), None).await, every);
    }
}

#[tokio::test]
async fn damage_to_a_checkpoint_of_the_chain_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    twenty(store.clone()).await;
    let path = store.log_path("r");
    let mut bytes = std::fs::read(&path).unwrap();
    // Inside the first record (the whole base every delta needs).
    bytes[40] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let err =
        guard(ring(3, 20, None).run_from_checkpoint(store.as_ref(), "r", None, &RunContext::new()))
            .await
            .unwrap_err();
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The workflow that wrote `tests/fixtures/format-v4` (a -> b, c -> d;
/// b and c share a thread), with the checkpoint store `store`.
fn fixture_workflow(store: Arc<dyn CheckpointStore>) -> Workflow {
    let g = Graph::builder()
        .add_agent(node("a"))
        .add_agent(node("b"))
        .add_agent(node("c"))
        .add_agent(node("d"))
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge("b", "d")
        .add_edge("c", "d")
        .start("a")
        .build()
        .unwrap();
    Workflow::builder()
        .name("fixture")
        .graph(g)
        .shared_thread("pair", ["b", "c"])
        .checkpoint_store(store)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_run_checkpointed_by_format_4_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v4");
    copy_tree(&fixture, dir.path());
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    let metas = store.list("v4-run").await.unwrap();
    assert_eq!(metas.len(), 3);
    assert!(metas.iter().all(|m| m.format_version == 4));
    let expected = [
        "user: hello fixture",
        "a: a saw 1 (13)",
        "b: b saw 1 (12)",
        "c: c saw 1 (12)",
        "d: d saw 2 (24)",
        "a/ user: hello fixture",
        "a/ a: a saw 1 (13)",
        "d/ b: b saw 1 (12)",
        "d/ c: c saw 1 (12)",
        "d/ d: d saw 2 (24)",
        "pair/ a: a saw 1 (13)",
        "pair/ b: b saw 1 (12)",
        "pair/ c: c saw 1 (12)",
    ];
    let wf = fixture_workflow(store.clone());
    // From the first checkpoint (after a): b, c and d run on this build.
    let r = guard(wf.run_from_checkpoint(
        store.as_ref(),
        "v4-run",
        Some(metas[0].id),
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(content(&r.thread), expected);
    // The resumed run wrote the current format after them, in the log.
    let now = store.list("v4-run").await.unwrap();
    assert!(now.len() > 3);
    assert!(now[3..].iter().all(|m| m.format_version == CURRENT_FORMAT));
    // The last checkpoint of format 4 resumes to the same end.
    let r = guard(wf.run_from_checkpoint(
        store.as_ref(),
        "v4-run",
        Some(metas[2].id),
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(content(&r.thread), expected);
}

/// The checkpoint format this build writes.
const CURRENT_FORMAT: u32 = 6;

/// `tests/fixtures/format-v5` holds a `FileStore` run written by format 5:
/// `ring(3, 8, ..)` from "hello v5", a checkpoint per superstep (deltas,
/// a whole one at superstep 5), the small state naming the messages
/// waiting in the inboxes by id. Every one of them resumes on this build
/// to the end the run had, and the resumed run writes the current format.
#[tokio::test]
async fn a_run_checkpointed_by_format_5_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v5");
    copy_tree(&fixture, dir.path());
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    let metas = store.list("v5-run").await.unwrap();
    assert_eq!(metas.len(), 7);
    assert!(metas.iter().all(|m| m.format_version == 5));
    let second = store.load("v5-run", &metas[1].id).await.unwrap().unwrap();
    assert_eq!(second.kind(), CheckpointKind::Delta);
    // The run uninterrupted, on this build: the run thread and each
    // agent's own thread.
    let whole = guard(ring(3, 8, None).run(
        Thread::from_messages([troupe_runtime::Message::user("hello v5")]),
        &RunContext::new(),
    ))
    .await
    .unwrap();
    let expected = content(&whole.thread);
    assert_eq!(
        expected[..8],
        [
            "user: hello v5",
            "m0: m0 saw 1 (8)",
            "m1: m1 saw 2 (20)",
            "m2: m2 saw 3 (33)",
            "m0: m0 saw 4 (46)",
            "m1: m1 saw 5 (59)",
            "m2: m2 saw 6 (72)",
            "m0: m0 saw 7 (85)",
        ]
    );
    for meta in &metas {
        let r = resume(store.as_ref(), "v5-run", Some(meta.id), 3, 8).await;
        assert_eq!(
            content(&r.thread),
            expected,
            "from superstep {}",
            meta.superstep
        );
    }
    // Resumed with the store, from superstep 3, the run writes the current
    // format after the old checkpoints, and each of those resumes too.
    let dyn_store: Arc<dyn CheckpointStore> = store.clone();
    let r = guard(ring(3, 8, Some(dyn_store)).run_from_checkpoint(
        store.as_ref(),
        "v5-run",
        Some(metas[2].id),
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(content(&r.thread), expected);
    let now = store.list("v5-run").await.unwrap();
    assert!(now.len() > metas.len() + 1);
    for meta in &now[metas.len()..] {
        assert_eq!(meta.format_version, CURRENT_FORMAT);
        let r = resume(store.as_ref(), "v5-run", Some(meta.id), 3, 8).await;
        assert_eq!(content(&r.thread), expected, "from {}", meta.id);
    }
}
