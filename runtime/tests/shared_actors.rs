//! One workflow value serving many concurrent runs: its agents' actors are
//! shared between the runs, each run's turns stay its own.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe_runtime::{AgentError, FnAgent, Reply, Router, RunContext, RunError, Thread, Workflow};

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// `slow` waits a while (panicking on a task that says "boom"), then
/// `tail` answers on the first poll of its turn: its actor idle, it runs
/// on its run's task (`tails` collects those tasks' ids).
fn team(tails: Arc<Mutex<HashSet<tokio::task::Id>>>) -> Workflow {
    Workflow::builder()
        .name("team")
        .participant(FnAgent::new("slow", |t: Arc<Thread>, _| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let text = last_text(&t);
            if text.contains("boom") {
                panic!("slow broke on {text}");
            }
            Ok::<_, AgentError>(Reply::text(format!("{text}>slow")))
        }))
        .participant(FnAgent::sync("tail", move |t: &Thread| {
            tails.lock().unwrap().insert(tokio::task::id());
            Ok(format!("{}>tail", last_text(t)))
        }))
        .router(
            Router::builder()
                .add_route("user", "slow")
                .add_route("slow", "tail")
                .output("tail"),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn concurrent_runs_share_each_agents_actor_and_a_panic_fails_only_its_own_run() {
    let tails = Arc::new(Mutex::new(HashSet::new()));
    let wf = team(tails.clone());
    let runs = (0..20).map(|i| {
        let wf = wf.clone();
        let task = if i == 7 {
            "boom".to_string()
        } else {
            format!("run {i}")
        };
        async move { wf.run_task(task, &RunContext::new()).await }
    });
    let results = tokio::time::timeout(Duration::from_secs(10), futures::future::join_all(runs))
        .await
        .expect("the runs hung");
    for (i, result) in results.into_iter().enumerate() {
        if i == 7 {
            let err = result.unwrap_err();
            assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
            assert_eq!(err.agent(), Some("team/slow"));
        } else {
            assert_eq!(result.unwrap().final_text(), format!("run {i}>slow>tail"));
        }
    }
    // Nineteen runs' turns of `tail`, each polled by its own run: the
    // shared actor was idle every time (one thread, no turn queued).
    assert_eq!(tails.lock().unwrap().len(), 19);
    // The panic broke nothing the next run needs.
    let next = wf.run_task("again", &RunContext::new()).await.unwrap();
    assert_eq!(next.final_text(), "again>slow>tail");
    assert_eq!(tails.lock().unwrap().len(), 20);
}

#[tokio::test]
async fn a_workflow_that_keeps_no_actors_spawns_one_per_run() {
    let tails = Arc::new(Mutex::new(HashSet::new()));
    let tails_in = tails.clone();
    let wf = Workflow::builder()
        .name("own")
        .participant(FnAgent::sync("tail", move |t: &Thread| {
            tails_in.lock().unwrap().insert(tokio::task::id());
            Ok(format!("{}>tail", last_text(t)))
        }))
        .reuse_actors(false)
        .build()
        .unwrap();
    for i in 0..3 {
        let result = wf.run_task(format!("{i}"), &RunContext::new()).await;
        assert_eq!(result.unwrap().final_text(), format!("{i}>tail"));
    }
    assert_eq!(tails.lock().unwrap().len(), 3);
}
