//! A turn of an agent whose actor is idle is polled by its run, on the
//! run's own task (`workflow/agent_gate.rs`); the actor stays the agent's
//! ordering point: one first poll at a time, a turn queued in its inbox
//! never overtaken, a panic caught and reported as from the actor.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe_runtime::{
    AgentError, FnAgent, Graph, RetryPolicy, Router, RunContext, RunError, Thread, Workflow,
};

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the runs hung")
}

/// One agent, `busy` for ~300 µs of its turn: `overlaps` counts the turns
/// that found another turn of it under way.
fn one_at_a_time(overlaps: Arc<AtomicU32>, reuse: bool) -> Workflow {
    let busy = Arc::new(AtomicBool::new(false));
    Workflow::builder()
        .name("gate")
        .participant(FnAgent::sync("solo", move |t: &Thread| {
            if busy.swap(true, Ordering::SeqCst) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_micros(300));
            busy.store(false, Ordering::SeqCst);
            Ok(format!("{}>solo", last_text(t)))
        }))
        .reuse_actors(reuse)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_shared_by_concurrent_runs_takes_one_turn_at_a_time() {
    let overlaps = Arc::new(AtomicU32::new(0));
    let wf = one_at_a_time(overlaps.clone(), true);
    // Runs on both worker threads at once: a turn either claims the idle
    // actor's gate and runs on its run's task, or queues in the actor's
    // inbox and waits there for the turn under way.
    let runs = (0..64).map(|i| {
        let wf = wf.clone();
        tokio::spawn(async move { wf.run_task(format!("r{i}"), &RunContext::new()).await })
    });
    let results = guard(futures::future::join_all(runs)).await;
    for (i, result) in results.into_iter().enumerate() {
        assert_eq!(result.unwrap().unwrap().final_text(), format!("r{i}>solo"));
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "turns overlapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_keeping_their_own_actors_run_apart() {
    // Without shared actors each run's agent is its own: nothing to order
    // between runs, and every run still ends with its own answer.
    let overlaps = Arc::new(AtomicU32::new(0));
    let wf = one_at_a_time(overlaps, false);
    let runs = (0..8).map(|i| {
        let wf = wf.clone();
        tokio::spawn(async move { wf.run_task(format!("r{i}"), &RunContext::new()).await })
    });
    for (i, result) in guard(futures::future::join_all(runs))
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(result.unwrap().unwrap().final_text(), format!("r{i}>solo"));
    }
}

#[tokio::test]
async fn turns_of_idle_actors_run_on_their_runs_task() {
    // A chain of three function nodes: each turn finishes on its first
    // poll, its actor idle, so all three run on the run's own task.
    let tasks = Arc::new(Mutex::new(Vec::new()));
    let node = |name: &'static str| {
        let tasks = tasks.clone();
        FnAgent::sync(name, move |t: &Thread| {
            tasks.lock().unwrap().push(tokio::task::id());
            Ok(format!("{}>{name}", last_text(t)))
        })
    };
    let graph = Graph::builder()
        .start("a")
        .add_agent(node("a"))
        .add_agent(node("b"))
        .add_agent(node("c"))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .build()
        .unwrap();
    let wf = Workflow::builder()
        .name("chain")
        .graph(graph)
        .build()
        .unwrap();
    for run in 0..2 {
        let result = guard(wf.run_task(format!("go{run}"), &RunContext::new())).await;
        assert_eq!(result.unwrap().final_text(), format!("go{run}>a>b>c"));
    }
    let tasks = tasks.lock().unwrap();
    assert_eq!(tasks.len(), 6);
    // One task per run (the run's), not one per agent (its actor's).
    assert_eq!(tasks[..3].iter().collect::<HashSet<_>>().len(), 1);
    assert_eq!(tasks[3..].iter().collect::<HashSet<_>>().len(), 1);
    assert_ne!(tasks[0], tasks[3]);
}

#[tokio::test]
async fn a_panic_in_an_inline_turn_is_retried_then_reported_as_before() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let wf = Workflow::builder()
        .name("team")
        .participant(FnAgent::sync(
            "brittle",
            move |_: &Thread| -> Result<String, AgentError> {
                if seen.fetch_add(1, Ordering::SeqCst) < 3 {
                    panic!("brittle broke");
                }
                Ok("mended".into())
            },
        ))
        .retry("brittle", RetryPolicy::fixed(3, Duration::from_millis(1)))
        .router(
            Router::builder()
                .add_route("user", "brittle")
                .output("brittle"),
        )
        .build()
        .unwrap();
    let err = guard(wf.run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
    assert_eq!(err.agent(), Some("team/brittle"));
    assert!(err.to_string().contains("brittle broke"), "{err}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "the first try and two more"
    );
    // The panic broke nothing the next run needs (the same shared actor).
    let next = guard(wf.run_task("again", &RunContext::new())).await;
    assert_eq!(next.unwrap().final_text(), "mended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_on_a_multi_threaded_runtime_runs_on_its_actors() {
    // The source runs alone (inline, on the run's task); its four branches
    // start together, so they go to their actors, to run in parallel.
    let tasks = Arc::new(Mutex::new(Vec::new()));
    let node = |name: String| {
        let tasks = tasks.clone();
        FnAgent::sync(name.clone(), move |_: &Thread| {
            tasks
                .lock()
                .unwrap()
                .push((name.clone(), tokio::task::id()));
            Ok(name.clone())
        })
    };
    let mut graph = Graph::builder()
        .start("source")
        .add_agent(node("source".into()));
    for b in 0..4 {
        graph = graph
            .add_agent(node(format!("b{b}")))
            .add_edge("source", format!("b{b}"));
    }
    let wf = Workflow::builder()
        .name("fan")
        .graph(graph.build().unwrap())
        .build()
        .unwrap();
    let result = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(result.turns, 5);
    let tasks = tasks.lock().unwrap();
    let source = tasks.iter().find(|(n, _)| n == "source").unwrap().1;
    let branches: HashSet<_> = tasks
        .iter()
        .filter(|(n, _)| n != "source")
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(branches.len(), 4, "each branch on its own actor's task");
    assert!(!branches.contains(&source), "none on the run's task");
}
