//! Presets under hostile input and durable runs: a map-reduce split into
//! more sub-tasks than its cap fails with a clear error instead of taking
//! the memory of as many workers; a preset reports the same status and
//! turns with a checkpoint store as without one, under a text mention and
//! under a timeout; and resuming a preset run that had stopped on its
//! condition returns its result again without another turn.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use troupe_presets::{DEFAULT_MAX_SUBTASKS, MapReduce, PresetError, RoundRobinGroupChat};
use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    AgentError, FnAgent, RunContext, RunError, RunResult, RunStatus, StopCondition, Thread,
    Workflow,
};

fn map_reduce(parts: usize, cap: Option<usize>) -> Result<Workflow, PresetError> {
    let mut b = MapReduce::builder()
        .name("mr")
        .split(move |_: &Thread| (0..parts).map(|i| format!("part {i}")).collect())
        .worker(FnAgent::sync("w", |_: &Thread| Ok("done")))
        .reducer(FnAgent::sync("r", |t: &Thread| {
            Ok(format!("{} results", t.len()))
        }));
    if let Some(cap) = cap {
        b = b.max_subtasks(cap);
    }
    b.build()
}

#[tokio::test]
async fn a_split_past_the_cap_fails_the_run_and_says_why() {
    let err = map_reduce(DEFAULT_MAX_SUBTASKS + 1, None)
        .unwrap()
        .run_task("go", &RunContext::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::AgentFailed { .. }), "{text}");
    assert!(
        text.contains("10001 sub-tasks, more than the limit of 10000"),
        "{text}"
    );
    assert!(text.contains("max_subtasks"), "{text}");

    // A cap of its own applies both ways.
    let err = map_reduce(4, Some(3))
        .unwrap()
        .run_task("go", &RunContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("more than the limit of 3"),
        "{err}"
    );
    let ok = map_reduce(3, Some(3))
        .unwrap()
        .run_task("go", &RunContext::new())
        .await
        .unwrap();
    assert_eq!(ok.final_text(), "3 results");
}

#[test]
fn a_cap_of_zero_is_refused_when_the_team_is_built() {
    let err = map_reduce(1, Some(0)).expect_err("a cap of 0 is refused");
    assert!(matches!(err, PresetError::ZeroLimit { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "team 'mr': `max_subtasks` must be at least 1"
    );
}

/// A writer and a critic; the critic approves on its second turn, each
/// turn takes `delay`; `calls` counts the turns that ran.
fn desk(
    stop: StopCondition,
    delay: Duration,
    store: Option<Arc<MemoryStore>>,
    calls: Arc<AtomicUsize>,
) -> Workflow {
    let turn = move |name: &'static str| {
        let calls = calls.clone();
        FnAgent::new(name, move |t: Arc<Thread>, _| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let approve = name == "critic" && t.len() >= 4;
                Ok::<_, AgentError>(if approve { "APPROVE" } else { "more" }.to_string())
            }
        })
    };
    let mut b = RoundRobinGroupChat::builder()
        .name("desk")
        .participant(turn("writer"))
        .participant(turn("critic"))
        .stop_condition(stop);
    if let Some(store) = store {
        b = b.checkpoint_store(store);
    }
    b.build().unwrap()
}

async fn run(w: &Workflow) -> RunResult {
    w.run_task("go", &RunContext::new().with_run_id("r"))
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_store_does_not_change_what_a_preset_reports() {
    let stops = [
        StopCondition::text_mention("APPROVE"),
        StopCondition::timeout(Duration::from_millis(2_500)),
    ];
    for stop in stops {
        let calls = Arc::new(AtomicUsize::new(0));
        let delay = Duration::from_secs(1);
        let bare = run(&desk(stop.clone(), delay, None, calls.clone())).await;
        let store = Arc::new(MemoryStore::new());
        let stored = run(&desk(stop.clone(), delay, Some(store.clone()), calls)).await;
        assert!(
            matches!(bare.status, RunStatus::Stopped(_)),
            "{}",
            bare.status
        );
        assert_eq!(stored.status, bare.status, "{stop:?}");
        assert_eq!(stored.turns, bare.turns, "{stop:?}");
        assert_eq!(stored.thread.len(), bare.thread.len(), "{stop:?}");
        assert!(
            store.latest("r").await.unwrap().is_some(),
            "it checkpointed"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn resuming_a_stopped_preset_run_runs_no_turn() {
    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let stop = StopCondition::max_turns(3);
    let w = desk(stop, Duration::ZERO, Some(store.clone()), calls.clone());
    let first = run(&w).await;
    assert!(
        matches!(first.status, RunStatus::Stopped(_)),
        "{}",
        first.status
    );
    let ran = calls.load(Ordering::SeqCst);
    assert_eq!(ran, 3);
    let saved = store.list("r").await.unwrap().len();
    for _ in 0..3 {
        let again = w.resume("r", &RunContext::new()).await.unwrap();
        assert_eq!(again.status, first.status);
        assert_eq!(again.thread.len(), first.thread.len(), "no message added");
        assert_eq!(again.turns, first.turns);
        assert_eq!(again.final_text(), first.final_text());
        assert_eq!(calls.load(Ordering::SeqCst), ran, "no turn ran");
    }
    assert_eq!(
        store.list("r").await.unwrap().len(),
        saved,
        "a resume that changes nothing saves no checkpoint"
    );
}
