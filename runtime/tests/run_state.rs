//! Run state (`Reply::with_state`, `RunContext::state`): applied by the
//! run, seen by later turns and by graph conditions, kept in the thread —
//! so concurrent runs are independent, and checkpoints, sessions and
//! nested workflows carry it.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    FnAgent, Graph, Reply, RunContext, Session, Thread, Workflow, graph::Condition,
    state::StateSnapshot,
};

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the test hung")
}

fn number(state: &StateSnapshot, key: &str) -> u32 {
    state.get(key).map_or(0, |v| v.parse().unwrap())
}

/// `count` adds one to state `n` each turn and loops while `n < 3` (a
/// condition reading the state); then `done` reports what it saw.
fn counting_loop(store: Option<Arc<MemoryStore>>) -> Workflow {
    let count = FnAgent::new("count", |_t: Arc<Thread>, ctx: RunContext| async move {
        let n = number(ctx.state(), "n") + 1;
        Ok(Reply::text(format!("counted {n}")).with_state("n", n.to_string()))
    });
    let done = FnAgent::new("done", |_t: Arc<Thread>, ctx: RunContext| async move {
        Ok(format!("done at n={}", number(ctx.state(), "n")))
    });
    let graph = Graph::builder()
        .add_agent(count)
        .add_agent(done)
        .add_loop(
            "count",
            "count",
            Condition::state_func("n < 3", |state, _| number(state, "n") < 3),
        )
        .add_transition("count", "done", Condition::otherwise())
        .loop_limit(10)
        .build()
        .unwrap();
    let mut b = Workflow::builder().name("counter").graph(graph);
    if let Some(s) = store {
        b = b.checkpoint_store(s);
    }
    b.build().unwrap()
}

#[tokio::test]
async fn later_turns_and_conditions_see_what_earlier_turns_set() {
    let result = guard(counting_loop(None).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(result.final_text(), "done at n=3");
    assert_eq!(result.state().get("n"), Some("3"));
    // The thread keeps it: a second run of the conversation starts from it.
    let mut thread = result.thread;
    thread.push(troupe_runtime::Message::user("again"));
    let again = guard(counting_loop(None).run(thread, &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(again.final_text(), "done at n=4");
}

#[tokio::test]
async fn concurrent_runs_of_one_workflow_keep_their_own_state() {
    let note = FnAgent::new("note", |t: Arc<Thread>, _ctx| async move {
        let task = t.last().unwrap().text_content().into_owned();
        // Long enough for the other run's turns to interleave.
        tokio::time::sleep(Duration::from_millis(if task == "a" { 50 } else { 5 })).await;
        Ok(Reply::text("noted").with_state("task", task))
    });
    let read = FnAgent::new("read", |_t: Arc<Thread>, ctx: RunContext| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(format!(
            "saw {}",
            ctx.state().get("task").unwrap_or("nothing")
        ))
    });
    let graph = Graph::builder()
        .add_agent(note)
        .add_agent(read)
        .add_edge("note", "read")
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(graph).build().unwrap();
    let runs: Vec<_> = ["a", "b", "c", "d"]
        .iter()
        .map(|task| {
            let wf = wf.clone();
            tokio::spawn(async move { wf.run_task(*task, &RunContext::new()).await })
        })
        .collect();
    for (task, run) in ["a", "b", "c", "d"].iter().zip(runs) {
        let result = guard(run).await.unwrap().unwrap();
        assert_eq!(result.final_text(), format!("saw {task}"));
        assert_eq!(result.state().len(), 1);
    }
}

#[tokio::test]
async fn a_resumed_run_carries_on_with_the_state_of_its_checkpoint() {
    let store = Arc::new(MemoryStore::new());
    let ctx = RunContext::new().with_run_id("r");
    let whole = guard(counting_loop(Some(store.clone())).run_task("go", &ctx))
        .await
        .unwrap();
    let checkpoints = store.list("r").await.unwrap();
    assert!(checkpoints.len() >= 4, "{} checkpoints", checkpoints.len());
    for cp in checkpoints {
        // A fresh workflow, as another process would build it.
        let resumed = guard(counting_loop(None).run_from_checkpoint(
            store.as_ref(),
            "r",
            Some(cp.id),
            &RunContext::new().with_run_id(format!("again-{}", cp.superstep)),
        ))
        .await
        .unwrap();
        assert_eq!(
            resumed.final_text(),
            whole.final_text(),
            "from superstep {}",
            cp.superstep
        );
        assert_eq!(resumed.state(), whole.state());
        assert_eq!(resumed.thread.len(), whole.thread.len());
    }
}

#[tokio::test]
async fn a_nested_workflow_starts_from_its_parents_state_and_hands_its_changes_up() {
    let inner_agent = FnAgent::new("double", |_t: Arc<Thread>, ctx: RunContext| async move {
        let x = number(ctx.state(), "x");
        Ok(Reply::text("doubled")
            .with_state("y", (2 * x).to_string())
            .without_state("scratch"))
    });
    let inner = Workflow::builder()
        .name("inner")
        .participant(inner_agent)
        .build()
        .unwrap();
    let set = FnAgent::sync("set", |_: &Thread| {
        Ok(Reply::text("set")
            .with_state("x", "21")
            .with_state("scratch", "tmp"))
    });
    let report = FnAgent::new("report", |_t: Arc<Thread>, ctx: RunContext| async move {
        let keys: Vec<_> = ctx.state().keys().cloned().collect();
        Ok(format!(
            "y={} keys={}",
            number(ctx.state(), "y"),
            keys.join(",")
        ))
    });
    let graph = Graph::builder()
        .add_agent(set)
        .add_agent(inner)
        .add_agent(report)
        .add_edge("set", "inner")
        .add_edge("inner", "report")
        .build()
        .unwrap();
    let outer = Workflow::builder()
        .name("outer")
        .graph(graph)
        .build()
        .unwrap();
    let result = guard(outer.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(result.final_text(), "y=42 keys=x,y");
    // The outer run keeps the values; the inner thread holds none.
    let inner_thread = result.thread.child("inner").unwrap();
    assert!(inner_thread.state().unwrap().scheduler.values().is_empty());
}

#[tokio::test]
async fn a_session_continued_by_another_workflow_value_keeps_the_state() {
    fn counter() -> Workflow {
        let agent = FnAgent::new("bot", |_t: Arc<Thread>, ctx: RunContext| async move {
            let n = number(ctx.state(), "messages") + 1;
            Ok(Reply::text(format!("message {n}")).with_state("messages", n.to_string()))
        });
        Workflow::builder()
            .name("bot")
            .participant(agent)
            .build()
            .unwrap()
    }
    let store = Arc::new(MemoryStore::new());
    let first = Session::new(counter(), store.clone());
    assert_eq!(
        guard(first.send("c", "hi")).await.unwrap().final_text(),
        "message 1"
    );
    drop(first);
    // As a new process would: a new workflow and session over the store.
    let second = Session::new(counter(), store.clone());
    assert_eq!(
        guard(second.send("c", "again")).await.unwrap().final_text(),
        "message 2"
    );
    assert_eq!(
        guard(second.send("other", "hi"))
            .await
            .unwrap()
            .final_text(),
        "message 1"
    );
}
