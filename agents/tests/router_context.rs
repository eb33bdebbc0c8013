//! A router-only run of `ChatAgent`s with capped inboxes (issue 22, item
//! 5a): each turn shows the model what fits in its window, not every
//! message the participant has received so far. Before the default
//! context was bounded, the n-th turn rendered all n messages, and the run
//! took quadratic time (2k/10k/20k messages: 0.55/13.5/51 s).

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_runtime::{InboxConfig, Router, RunContext, StopCondition, Workflow};

/// A model that answers a few words and keeps the largest number of
/// messages it was shown on a call, and how many calls it had.
fn model(window: usize, most: Arc<AtomicUsize>, calls: Arc<AtomicUsize>) -> ScriptedModel {
    ScriptedModel::from_fn(move |request| {
        most.fetch_max(request.messages.len(), Ordering::Relaxed);
        calls.fetch_add(1, Ordering::Relaxed);
        Ok(ScriptedReply::text("a short answer of a few words"))
    })
    .with_context_window(window)
    .record_requests(false)
}

#[tokio::test]
async fn a_long_router_only_run_shows_each_turn_a_window_not_the_whole_run() {
    let messages = 1_500;
    let most = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    // About 12 tokens a message: a 400-token window holds about 30.
    let agent = |name: &str| {
        ChatAgent::builder(name)
            .model(model(400, most.clone(), calls.clone()))
            .build()
            .unwrap()
    };
    let capped = InboxConfig::new().capacity(2);
    let flow = Workflow::builder()
        .name("router-window")
        .participant(agent("client"))
        .participant(agent("server"))
        .router(
            Router::builder()
                .add_route(Router::USER, "client")
                .add_route("client", "server")
                .add_route("server", "client")
                .inbox("server", capped.clone())
                .inbox("client", capped),
        )
        .stop_condition(StopCondition::max_messages(messages))
        .build()
        .unwrap();
    let result = flow.run_task("go", &RunContext::new()).await.unwrap();

    // The run is long: every message is in its thread.
    assert!(
        result.thread.len() >= messages as usize,
        "{}",
        result.thread.len()
    );
    assert!(calls.load(Ordering::Relaxed) >= messages as usize - 1);
    // Yet no call was shown more than the window holds: a turn's cost
    // does not grow with the run.
    let most = most.load(Ordering::Relaxed);
    assert!(
        (10..=40).contains(&most),
        "a call was shown {most} messages of a {messages}-message run"
    );
}
