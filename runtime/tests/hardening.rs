//! Careless input and crashes at the runtime's own level: a builder refuses
//! limits of 0 with a typed error rather than running a workflow that
//! could never do what was meant, and a file store cleans up the
//! temporary files a killed process left behind when it is opened.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::time::Duration;

use troupe_runtime::store::{FileStore, ThreadStore};
use troupe_runtime::{
    BuildError, FnAgent, Graph, RetryPolicy, StopCondition, Thread, Workflow, WorkflowBuilder,
};

fn echo(name: &str) -> FnAgent {
    FnAgent::sync(name, |_: &Thread| Ok("ok"))
}

fn two() -> WorkflowBuilder {
    Workflow::builder()
        .participant(echo("a"))
        .participant(echo("b"))
}

#[test]
fn a_retry_policy_without_attempts_is_refused() {
    let err = two()
        .retry("b", RetryPolicy::fixed(0, Duration::ZERO))
        .build()
        .expect_err("refused");
    assert!(
        matches!(&err, BuildError::ZeroAttempts { agent } if agent == "b"),
        "{err}"
    );
    assert!(err.to_string().contains("max_attempts 0"), "{err}");

    // A graph node's own policy too.
    let graph = Graph::builder()
        .add_agent(echo("a"))
        .retry("a", RetryPolicy::fixed(0, Duration::ZERO))
        .start("a")
        .build()
        .unwrap();
    let err = Workflow::builder()
        .graph(graph)
        .build()
        .expect_err("refused");
    assert!(matches!(err, BuildError::ZeroAttempts { .. }), "{err}");

    assert!(
        two()
            .retry("b", RetryPolicy::fixed(1, Duration::ZERO))
            .build()
            .is_ok()
    );
}

#[test]
fn a_stop_limit_of_zero_is_refused_wherever_it_stands() {
    for stop in [
        StopCondition::max_messages(0),
        StopCondition::max_turns(0),
        StopCondition::text_mention("DONE") | StopCondition::max_messages(0),
        StopCondition::text_mention("DONE")
            & (StopCondition::max_turns(0) | StopCondition::max_turns(3)),
    ] {
        let shown = stop.to_string();
        let err = two().stop_condition(stop).build().expect_err("refused");
        assert!(
            matches!(err, BuildError::ZeroStopLimit { .. }),
            "{shown}: {err}"
        );
        assert!(err.to_string().contains("must be at least 1"), "{err}");
    }
    assert!(
        two()
            .stop_condition(StopCondition::max_messages(1))
            .build()
            .is_ok()
    );
}

#[tokio::test]
async fn opening_a_file_store_removes_temporary_files_of_dead_writers() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    store.save_thread("c1", &Thread::new()).await.unwrap();
    let threads = dir.path().join("threads");
    let run = dir.path().join("checkpoints").join("r1");
    fs::create_dir_all(&run).unwrap();
    // What a process killed mid-write leaves: pid 4194304 is past Linux's
    // largest, so no such process runs. Pid 1 always runs.
    let dead = [
        threads.join(".c1.thread.tmp-4194304-0"),
        run.join(".checkpoints.log.tmp-4194304-3"),
    ];
    let live = threads.join(".c1.thread.tmp-1-0");
    let other = threads.join(".notes");
    for f in dead.iter().chain([&live, &other]) {
        fs::write(f, b"half a write").unwrap();
    }
    drop(store);

    let store = FileStore::open(dir.path()).unwrap();
    for f in &dead {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    assert!(live.exists(), "a live writer's file was removed");
    assert!(other.exists(), "a file not ours was removed");
    assert!(store.load_thread("c1").await.unwrap().is_some());
}
