//! Any bytes as a checkpoint's payload — whole (format 5 and the older
//! format 4), a delta on a real checkpoint, or a chain payload alone —
//! resume to a run or to an error that names the checkpoint, never a
//! panic or a hang. The payload goes the way a resume takes it: saved in
//! a store (memory, file log or SQLite, each with its own encoding of the
//! checkpoint), loaded back, checksum, chain folding, decoding, the
//! scheduler-state checks, then the run. The first byte picks the form
//! (low two bits) and the store (the next two).
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use troupe_runtime::checkpoint::{ChainPayload, Folded, ID_RUNS_VERSION};
use troupe_runtime::store::{
    Checkpoint, CheckpointStore, FileStore, MemoryStore, SqliteStore, legacy_checksum,
};
use troupe_runtime::{FnAgent, Graph, RunContext, StopCondition, Thread, Workflow};

/// A ring of three function agents for four turns, with or without a
/// store (the topology is the same either way).
fn ring(store: Option<Arc<MemoryStore>>) -> Workflow {
    let agent = |name: &'static str| {
        FnAgent::sync(name, move |t: &Thread| Ok(format!("{name} {}", t.len())))
    };
    let graph = Graph::builder()
        .add_agent(agent("a"))
        .add_agent(agent("b"))
        .add_agent(agent("c"))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", "a")
        .start("a")
        .loop_limit(100)
        .build()
        .expect("graph");
    let mut b = Workflow::builder()
        .graph(graph)
        .stop_condition(StopCondition::max_turns(4));
    if let Some(store) = store {
        b = b.checkpoint_store(store);
    }
    b.build().expect("workflow")
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    workflow: Workflow,
    /// A file store kept across inputs (each input's run is deleted after).
    files: FileStore,
    /// An SQLite database kept across inputs, likewise.
    sqlite: SqliteStore,
    /// A real whole checkpoint of the ring, for deltas to follow.
    base: Checkpoint,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let store = Arc::new(MemoryStore::new());
        let base = runtime.block_on(async {
            ring(Some(store.clone()))
                .run_task("go", &RunContext::new().with_run_id("r"))
                .await
                .expect("the seed run");
            let first = store.list("r").await.expect("list")[0].id;
            store
                .load("r", &first)
                .await
                .expect("load")
                .expect("a checkpoint")
        });
        // In memory where the system has it: a log write per input.
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let root = dir.join(format!("troupe-fuzz-decode-{}", std::process::id()));
        Fixture {
            runtime,
            workflow: ring(None),
            base,
            files: FileStore::open(&root).expect("file store"),
            sqlite: SqliteStore::in_memory().expect("sqlite store"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let topology = f.base.topology_hash;
    let memory = MemoryStore::new();
    let store: &dyn CheckpointStore = match (pick >> 2) % 3 {
        0 => &memory,
        1 => &f.files,
        _ => &f.sqlite,
    };
    let mut chain = Vec::new();
    match pick % 4 {
        0 => chain.push(Checkpoint::new("r", None, 1, topology, rest.to_vec())),
        1 => {
            let mut payload = vec![b'D'];
            payload.extend_from_slice(rest);
            chain.push(f.base.clone());
            chain.push(Checkpoint::new("r", Some(f.base.id), 2, topology, payload));
        }
        2 => {
            let mut cp = Checkpoint::new("r", None, 1, topology, rest.to_vec());
            cp.format_version = 4;
            cp.checksum = legacy_checksum(&cp.payload);
            chain.push(cp);
        }
        _ => {
            for version in [5, ID_RUNS_VERSION] {
                if let Ok((delta, payload)) = ChainPayload::decode(rest, version) {
                    let mut folded = Folded::default();
                    folded.apply(delta, payload);
                    let _ = folded.to_payload().encode(false, version);
                }
            }
            return;
        }
    }
    // Chained payloads as format 5 wrote them (ids whole) half the time.
    if pick & 0x10 != 0 {
        for cp in chain.iter_mut().filter(|cp| cp.format_version > 5) {
            cp.format_version = 5;
        }
    }
    f.runtime.block_on(async {
        for cp in &chain {
            store.save(cp).await.expect("a memory store saves");
        }
        match f
            .workflow
            .run_from_checkpoint(store, "r", None, &RunContext::new())
            .await
        {
            Ok(r) => {
                let _ = r.thread.len();
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
        // The next input starts from an empty run (newest first, so no
        // delta is made whole on the way).
        for cp in chain.iter().rev() {
            store.delete("r", &cp.id).await.expect("delete");
        }
        assert!(store.list("r").await.expect("list").is_empty());
    });
});
