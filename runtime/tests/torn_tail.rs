//! A directory store's checkpoint log cut at every length inside its last
//! record, as a kill in the middle of the append leaves it: the resume
//! cuts the torn bytes off (saying how many, as a warning event), carries
//! on from the checkpoint before, and ends with the thread of the
//! uninterrupted run; the log is whole again afterwards.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use troupe_runtime::store::{CheckpointStore, FileStore};
use troupe_runtime::{Event, FnAgent, Graph, RunContext, Thread, Workflow, sink::EventSink};

/// A node whose answer depends only on its thread (so a resumed run
/// answers as the uninterrupted one did), padded so records are long.
fn node(name: &str) -> FnAgent {
    let n = name.to_string();
    FnAgent::sync(name, move |t: &Thread| {
        let digest: usize = t.messages().iter().map(|m| m.text_content().len()).sum();
        Ok(format!(
            "{n} saw {} ({digest}) {}",
            t.len(),
            "x".repeat(300)
        ))
    })
}

fn chain(store: Arc<dyn CheckpointStore>) -> Workflow {
    let names = ["a", "b", "c", "d"];
    let mut g = Graph::builder();
    for n in names {
        g = g.add_agent(node(n));
    }
    for pair in names.windows(2) {
        g = g.add_edge(pair[0], pair[1]);
    }
    Workflow::builder()
        .name("chain")
        .graph(g.build().unwrap())
        .checkpoint_store(store)
        .build()
        .unwrap()
}

fn said(t: &Thread) -> Vec<(String, String)> {
    t.messages()
        .iter()
        .map(|m| (m.source.to_string(), m.text_content().into_owned()))
        .collect()
}

/// Where a log's records start (each: length u32 LE, crc u32, body).
fn record_starts(log: &[u8]) -> Vec<usize> {
    let mut at = 8;
    let mut starts = Vec::new();
    while at < log.len() {
        starts.push(at);
        at += 8 + u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
    }
    assert_eq!(at, log.len());
    starts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_at_every_length_of_its_last_record_resumes_to_the_same_thread() {
    let pristine = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(pristine.path()).unwrap());
    let clean = chain(store.clone())
        .run_task("go", &RunContext::new().with_run_id("r"))
        .await
        .unwrap();
    let expected = said(&clean.thread);
    assert_eq!(expected.len(), 5);
    let log = std::fs::read(store.log_path("r")).unwrap();
    let last = *record_starts(&log).last().unwrap();
    let last_len = log.len() - last;
    assert!(last_len > 300, "{last_len}");
    for keep in 1..last_len {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileStore::open(dir.path()).unwrap());
        std::fs::create_dir_all(store.run_dir("r")).unwrap();
        std::fs::write(store.log_path("r"), &log[..last + keep]).unwrap();
        assert_eq!(store.runs().await.unwrap(), vec!["r".to_string()]);
        assert_eq!(
            store.damage("r").await.unwrap(),
            None,
            "a torn tail is no damage"
        );

        let warnings = Arc::new(Mutex::new(Vec::new()));
        let seen = warnings.clone();
        let sink = EventSink::callback(move |r| {
            if let Event::Warning { text, .. } = &r.event {
                seen.lock().unwrap().push(text.clone());
            }
        });
        let resumed = chain(store.clone())
            .resume("r", &RunContext::with_sink(sink))
            .await
            .unwrap();
        assert_eq!(said(&resumed.thread), expected, "keep {keep}");
        let warnings = warnings.lock().unwrap().clone();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("dropped {keep} bytes after byte {last}"))),
            "keep {keep}: {warnings:?}"
        );
        // Whole again: every record reads, the newest is the run's end.
        let after = std::fs::read(store.log_path("r")).unwrap();
        assert_eq!(&after[..last], &log[..last]);
        record_starts(&after);
        let reopened = FileStore::open(dir.path()).unwrap();
        assert_eq!(
            reopened.list("r").await.unwrap().len(),
            record_starts(&log).len()
        );
        assert_eq!(
            reopened.latest("r").await.unwrap().map(|c| c.id),
            resumed.checkpoint
        );
    }
}
