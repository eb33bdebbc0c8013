//! A checkpoint taken as a run ended on its stop condition: a run resumed
//! from it ends so again, running nothing more.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    FnAgent, Graph, RouterBuilder, RunContext, RunStatus, StopCondition, Thread, Workflow,
};

/// Two agents taking turns in a ring until three turns have passed.
fn ring(store: Arc<MemoryStore>) -> Workflow {
    let graph = Graph::builder()
        .add_agent(FnAgent::sync("a", |t: &Thread| {
            Ok(format!("a after {}", t.len()))
        }))
        .add_agent(FnAgent::sync("b", |t: &Thread| {
            Ok(format!("b after {}", t.len()))
        }))
        .add_edge("a", "b")
        .add_edge("b", "a")
        .start("a")
        .loop_limit(u32::MAX)
        .build()
        .unwrap();
    Workflow::builder()
        .graph(graph)
        .router(RouterBuilder::default())
        .stop_condition(StopCondition::max_turns(3))
        .checkpoint_store(store)
        .build()
        .unwrap()
}

#[tokio::test]
async fn resuming_the_last_checkpoint_of_a_stopped_run_runs_nothing_more() {
    let store = Arc::new(MemoryStore::new());
    let whole = ring(store.clone())
        .run_task("go", &RunContext::new().with_run_id("r"))
        .await
        .unwrap();
    assert!(
        matches!(whole.status, RunStatus::Stopped(_)),
        "{}",
        whole.status
    );
    let last = store.latest("r").await.unwrap().unwrap();
    let again = ring(Arc::new(MemoryStore::new()))
        .run_from_checkpoint(store.as_ref(), "r", Some(last.id), &RunContext::new())
        .await
        .unwrap();
    assert_eq!(again.status, whole.status);
    assert_eq!(again.final_text(), whole.final_text());
    assert_eq!(again.thread.len(), whole.thread.len(), "no turn ran again");
    assert_eq!(again.turns, whole.turns);
}
