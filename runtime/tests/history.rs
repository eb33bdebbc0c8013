//! `WorkflowBuilder::max_history`: a long run keeps the last messages of
//! each thread — what participants see, what checkpoints store, what the
//! result holds — and a run resumed or continued from it carries on.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    FnAgent, Graph, InboxConfig, Message, Reply, Router, RouterBuilder, RunContext, RunStatus,
    StopCondition, Thread, Workflow,
};

/// A ping-pong between two function agents in a router-only run with
/// capped inboxes, stopped after `messages` messages; `seen` records the
/// longest thread a turn was given.
fn ping_pong(
    messages: u64,
    history: Option<usize>,
    store: Option<Arc<MemoryStore>>,
    seen: Arc<AtomicUsize>,
) -> Workflow {
    let (s1, s2) = (seen.clone(), seen);
    let client = FnAgent::sync("client", move |t: &Thread| {
        s1.fetch_max(t.len(), Ordering::Relaxed);
        Ok(Reply::from(
            (0..3)
                .map(|i| Message::text("client", format!("ping {i} after {}", t.len())))
                .collect::<Vec<_>>(),
        ))
    });
    let server = FnAgent::sync("server", move |t: &Thread| {
        s2.fetch_max(t.len(), Ordering::Relaxed);
        Ok(format!("pong {}", t.len()))
    });
    let capped = InboxConfig::new().capacity(2);
    let mut b = Workflow::builder()
        .name("ping-pong")
        .participant(client)
        .participant(server)
        .router(
            Router::builder()
                .add_route(Router::USER, "client")
                .add_route("client", "server")
                .add_route("server", "client")
                .inbox("server", capped.clone())
                .inbox("client", capped),
        )
        .stop_condition(StopCondition::max_messages(messages));
    if let Some(n) = history {
        b = b.max_history(n);
    }
    if let Some(store) = store {
        b = b.checkpoint_store(store).checkpoint_every(1);
    }
    b.build().unwrap()
}

#[tokio::test]
async fn a_long_run_keeps_the_last_messages_of_each_thread() {
    let seen = Arc::new(AtomicUsize::new(0));
    let all = ping_pong(400, None, None, seen.clone())
        .run_task("go", &RunContext::new())
        .await
        .unwrap();
    assert!(all.thread.len() >= 400, "{}", all.thread.len());
    assert!(seen.load(Ordering::Relaxed) > 100);

    let seen = Arc::new(AtomicUsize::new(0));
    let kept = ping_pong(400, Some(20), None, seen.clone())
        .run_task("go", &RunContext::new())
        .await
        .unwrap();
    assert!(
        matches!(kept.status, RunStatus::Stopped(_)),
        "{}",
        kept.status
    );
    assert_eq!(kept.thread.len(), 20);
    assert_eq!(kept.messages.len(), 20);
    // The newest are kept, in order: the run's last message is the last.
    assert_eq!(
        kept.thread.last().map(|m| m.id),
        kept.messages.last().map(|m| m.id)
    );
    assert_eq!(
        kept.final_response.as_ref().map(|m| m.id),
        kept.thread.last().map(|m| m.id)
    );
    for (name, child) in kept.thread.children() {
        assert!(child.len() <= 20, "{name}: {}", child.len());
    }
    // Turns saw at most a quarter more than the limit.
    let most = seen.load(Ordering::Relaxed);
    assert!((20..=25).contains(&most), "a turn saw {most} messages");
    // As many turns as without a limit: the limit changes what is kept,
    // not what runs.
    assert_eq!(kept.turns, all.turns);
}

#[tokio::test]
async fn checkpoints_of_a_kept_history_resume_and_stay_bounded() {
    let store = Arc::new(MemoryStore::new().keep_last(10_000));
    let seen = Arc::new(AtomicUsize::new(0));
    let whole = ping_pong(300, Some(16), Some(store.clone()), seen.clone())
        .run_task("go", &RunContext::new().with_run_id("pp"))
        .await
        .unwrap();
    assert_eq!(whole.thread.len(), 16);
    // A checkpoint from the middle of the run holds its kept history, and
    // a run resumed from it ends as the whole run did, bounded too.
    let list = store.list("pp").await.unwrap();
    assert!(list.len() > 50, "{} checkpoints", list.len());
    let middle = &list[list.len() / 2];
    let resumed = ping_pong(300, Some(16), None, seen.clone())
        .run_from_checkpoint(store.as_ref(), "pp", Some(middle.id), &RunContext::new())
        .await
        .unwrap();
    assert_eq!(resumed.status, whole.status);
    assert_eq!(resumed.thread.len(), 16);
    assert!(seen.load(Ordering::Relaxed) <= 20);
}

#[tokio::test]
async fn a_conversation_continues_over_a_kept_history() {
    // A graph ring: each turn answers with what it saw.
    let ring = || {
        let graph = Graph::builder()
            .add_agent(FnAgent::sync("a", |t: &Thread| {
                Ok(format!("a saw {}", t.len()))
            }))
            .add_agent(FnAgent::sync("b", |t: &Thread| {
                Ok(format!(
                    "b saw {}",
                    t.last().map(|m| m.text_content()).unwrap_or_default()
                ))
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
            .stop_condition(StopCondition::max_turns(30))
            .max_history(8)
            .build()
            .unwrap()
    };
    let first = ring().run_task("first", &RunContext::new()).await.unwrap();
    assert_eq!(first.thread.len(), 8);
    // The next task of the conversation is new input, and only it: the
    // kept messages are not taken in again.
    let mut thread = first.thread.clone();
    thread.push(Message::user("second"));
    let second = ring().run(thread, &RunContext::new()).await.unwrap();
    assert_eq!(second.thread.len(), 8);
    assert!(second.turns >= 1 && second.turns <= 30, "{}", second.turns);
    assert!(
        second
            .messages
            .iter()
            .all(|m| m.source.as_ref() == "a" || m.source.as_ref() == "b"),
        "the result's messages are the run's own"
    );
}
