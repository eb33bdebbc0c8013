//! A question asked in one branch of a graph holds the graph where it
//! stands: the branches that finished meanwhile still count at the join
//! after them, and loop counters go on, once the answer comes — from the
//! returned thread or from the store, in another process.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    Event, FnAgent, Graph, Reply, RunContext, RunError, RunResult, RunStatus, Thread, Workflow,
    graph::Condition,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

/// Says `text`, every time.
fn says(name: &str, text: &'static str) -> FnAgent {
    FnAgent::sync(name, move |_: &Thread| Ok(Reply::text(text)))
}

/// Asks, then — the answer the last message of its thread — says what it
/// got.
fn asker(name: &str) -> FnAgent {
    FnAgent::sync(name, |t: &Thread| {
        match t
            .messages()
            .last()
            .filter(|m| m.metadata.contains_key("troupe.request"))
        {
            Some(answer) => Ok(Reply::text(format!("got {}", answer.text_content()))),
            None => Ok(Reply::ask("which colour?")),
        }
    })
}

/// `split -> asker, worker -> join`: `join` waits for both branches.
fn fan_in(store: Option<Arc<dyn CheckpointStore>>) -> Workflow {
    let g = Graph::builder()
        .add_agent(says("split", "split"))
        .add_agent(asker("asker"))
        .add_agent(says("worker", "worked"))
        .add_agent(says("join", "joined"))
        .add_edge("split", "asker")
        .add_edge("split", "worker")
        .add_edge("asker", "join")
        .add_edge("worker", "join")
        .build()
        .unwrap();
    let mut w = Workflow::builder().name("fan").graph(g);
    if let Some(store) = store {
        w = w.checkpoint_store(store);
    }
    w.build().unwrap()
}

fn the_question(r: &RunResult) -> String {
    match &r.status {
        RunStatus::WaitingForInput(q) if q.len() == 1 => q[0].id.clone(),
        other => panic!("expected one question, got {other}"),
    }
}

fn said(t: &Thread) -> Vec<String> {
    t.messages()
        .iter()
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect()
}

const ANSWERED: [&str; 6] = [
    "user: go",
    "split: split",
    "worker: worked",
    "user: red",
    "asker: got red",
    "join: joined",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_branch_that_finished_while_the_other_asked_still_counts_at_the_join() {
    let wf = fan_in(None);
    let ctx = RunContext::new();
    let first = guard(wf.run_task("go", &ctx)).await.unwrap();
    let id = the_question(&first);
    let done = guard(wf.respond_in_thread(first.thread, &id, "red", &ctx))
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(said(&done.thread), ANSWERED);
    assert_eq!(done.final_text(), "joined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_from_the_store_the_join_runs_and_supersteps_count_on() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let (ctx, mut events) = RunContext::stream();
    let ctx = ctx.with_run_id("fan-1");
    let first = guard(fan_in(Some(store.clone())).run_task("go", &ctx))
        .await
        .unwrap();
    let id = the_question(&first);
    // Another workflow value, as in another process.
    let done =
        guard(fan_in(Some(store.clone())).respond(store.as_ref(), "fan-1", &id, "red", &ctx))
            .await
            .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(said(&done.thread), ANSWERED);
    let supersteps: Vec<u64> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::SuperstepStarted { superstep, .. } => Some(superstep),
            _ => None,
        })
        .collect();
    // split; asker and worker; then, answered, the asker again; the join.
    assert_eq!(supersteps, [1, 2, 3, 4]);
}

/// `draft -> ask`, back to `draft` once answered, `max_loops` times at
/// most.
fn asking_loop(max_loops: u32) -> Workflow {
    let g = Graph::builder()
        .add_agent(says("draft", "draft"))
        .add_agent(asker("ask"))
        .add_edge("draft", "ask")
        .add_loop_with_limit("ask", "draft", Condition::text_contains("got"), max_loops)
        .build()
        .unwrap();
    Workflow::builder().name("loop").graph(g).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_counters_hold_across_questions() {
    let wf = asking_loop(2);
    let ctx = RunContext::new();
    let mut r = guard(wf.run_task("go", &ctx)).await.unwrap();
    // Each answer takes the loop round once more; the third goes past
    // its limit.
    for round in 1..=2 {
        let id = the_question(&r);
        r = guard(wf.respond_in_thread(r.thread, &id, format!("answer {round}"), &ctx))
            .await
            .unwrap();
    }
    let id = the_question(&r);
    let err = guard(wf.respond_in_thread(r.thread, &id, "answer 3", &ctx))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::LoopLimit { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "max loop iterations exceeded (step: draft, limit: 2)"
    );
}
