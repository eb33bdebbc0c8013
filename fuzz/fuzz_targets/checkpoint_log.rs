//! Any bytes in a file store's files — a run's checkpoint log, a
//! checkpoint file of an earlier format, a conversation's thread — load as
//! checkpoints, a summary and a thread, or as an error naming the file,
//! never a panic or a hang. The first byte picks the file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use troupe_runtime::store::{CheckpointStore, FileStore, ThreadStore};

struct Fixture {
    runtime: tokio::runtime::Runtime,
    store: FileStore,
    root: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // In memory where the system has it: a file per input.
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let root = base.join(format!("troupe-fuzz-log-{}", std::process::id()));
        let store = FileStore::open(&root).expect("store");
        std::fs::create_dir_all(root.join("checkpoints").join("r")).expect("run dir");
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            store,
            root,
        }
    })
}

/// An id of the form checkpoint files are named by.
const ID: &str = "18eb061d0a9783cb7d20194b4bb4a85f";

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let run = f.root.join("checkpoints").join("r");
    let log = run.join("checkpoints.log");
    let file = run.join(format!("{ID}.ckpt"));
    let thread = f.root.join("threads").join("c.thread");
    for old in [&log, &file, &thread] {
        let _ = std::fs::remove_file(old);
    }
    let target = match pick % 3 {
        0 => &log,
        1 => &file,
        _ => &thread,
    };
    std::fs::write(target, rest).expect("write");
    f.runtime.block_on(async {
        let store = &f.store;
        if let Ok(Some(latest)) = store.latest("r").await {
            let _ = store.chain("r", &latest.id).await;
        }
        if let Ok(list) = store.list("r").await {
            for meta in list {
                let _ = store.load("r", &meta.id).await;
            }
        }
        let _ = troupe_runtime::history::summarize_runs(store).await;
        let _ = store.load_thread("c").await;
    });
});
