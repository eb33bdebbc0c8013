//! A graceful stop: no new turn starts, the turns under way finish and are
//! checkpointed, the run ends `Interrupted`, and resuming finishes it as an
//! uninterrupted run would — nested runs included.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use troupe_runtime::store::MemoryStore;
use troupe_runtime::{
    Agent, FnAgent, Graph, Router, RunContext, RunStatus, Thread, Workflow, history::summarize_run,
};

/// A node that takes `ms` and says what it saw.
fn slow(name: &str, ms: u64) -> FnAgent {
    let n = name.to_string();
    FnAgent::new(name, move |t: Arc<Thread>, _ctx: RunContext| {
        let n = n.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(format!("{n} saw {}", t.len()))
        }
    })
}

fn chain(store: Option<Arc<MemoryStore>>, nodes: Vec<Arc<dyn Agent>>, name: &str) -> Workflow {
    let names: Vec<String> = nodes.iter().map(|a| a.name().to_string()).collect();
    let mut g = Graph::builder().add_agents(nodes);
    for pair in names.windows(2) {
        g = g.add_edge(pair[0].clone(), pair[1].clone());
    }
    let mut b = Workflow::builder().name(name).graph(g.build().unwrap());
    if let Some(s) = store {
        b = b.checkpoint_store(s);
    }
    b.build().unwrap()
}

fn lines(t: &Thread) -> Vec<String> {
    t.messages()
        .iter()
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect()
}

fn agents(list: &[(&str, u64)]) -> Vec<Arc<dyn Agent>> {
    list.iter()
        .map(|&(n, ms)| Arc::new(slow(n, ms)) as Arc<dyn Agent>)
        .collect()
}

#[tokio::test]
async fn a_graceful_stop_lets_the_turn_finish_and_resume_carries_on() {
    let steps = [("a", 0), ("b", 300), ("c", 0)];
    let plain = chain(None, agents(&steps), "chain")
        .run_task("go", &RunContext::new())
        .await
        .unwrap();

    let store = Arc::new(MemoryStore::new());
    let wf = chain(Some(store.clone()), agents(&steps), "chain");
    let ctx = RunContext::new().with_run_id("r");
    let stopper = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stopper.stop_gracefully();
    });
    let r = wf.run_task("go", &ctx).await.unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    // b was under way: it finished, and c did not start.
    let got = lines(&r.thread);
    assert_eq!(got, lines(&plain.thread)[..3].to_vec(), "{got:?}");

    let summary = summarize_run(store.as_ref(), "r").await.unwrap().unwrap();
    assert_eq!(summary.status, Some(RunStatus::Interrupted));
    assert_eq!(summary.superstep, 2);

    let resumed = wf.resume("r", &RunContext::new()).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!(lines(&resumed.thread), lines(&plain.thread));
    assert_eq!(resumed.final_text(), plain.final_text());
    let summary = summarize_run(store.as_ref(), "r").await.unwrap().unwrap();
    assert_eq!(summary.status, Some(RunStatus::Completed));
}

#[tokio::test]
async fn a_nested_run_stops_with_its_parent_and_runs_again_on_resume() {
    let inner =
        || Arc::new(chain(None, agents(&[("x", 0), ("y", 300)]), "inner")) as Arc<dyn Agent>;
    let outer = |store: Option<Arc<MemoryStore>>| {
        let mut nodes = agents(&[("a", 0)]);
        nodes.push(inner());
        nodes.extend(agents(&[("c", 0)]));
        chain(store, nodes, "outer")
    };
    let plain = outer(None)
        .run_task("go", &RunContext::new())
        .await
        .unwrap();

    let store = Arc::new(MemoryStore::new());
    let wf = outer(Some(store.clone()));
    let ctx = RunContext::new().with_run_id("n");
    let stopper = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stopper.stop_gracefully();
    });
    let r = wf.run_task("go", &ctx).await.unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    // The nested step was cut short: only a's answer is kept.
    assert_eq!(lines(&r.thread), lines(&plain.thread)[..2].to_vec());

    let resumed = wf.resume("n", &RunContext::new()).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!(lines(&resumed.thread), lines(&plain.thread));
}

#[tokio::test]
async fn a_cancel_after_a_graceful_stop_still_ends_the_run_at_once() {
    let store = Arc::new(MemoryStore::new());
    let wf = Workflow::builder()
        .name("slow")
        .participant(slow("sleeper", 60_000))
        .router(
            Router::builder()
                .add_route("user", "sleeper")
                .output("sleeper"),
        )
        .checkpoint_store(store.clone())
        .build()
        .unwrap();
    let ctx = RunContext::new().with_run_id("s");
    let stopper = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.stop_gracefully();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let r = tokio::time::timeout(Duration::from_secs(5), wf.run_task("go", &ctx))
        .await
        .expect("the cancel did not end the run")
        .unwrap();
    assert_eq!(r.status, RunStatus::Cancelled);
    let s = summarize_run(store.as_ref(), "s").await.unwrap().unwrap();
    assert_eq!(s.status, Some(RunStatus::Cancelled));
}
