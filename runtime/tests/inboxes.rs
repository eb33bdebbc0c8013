//! Every inbox setting — sender filter, batch size, time-to-live, capacity
//! under each overflow policy, max wait — in router-only and graph runs,
//! on tokio's paused clock: the run's waits (max wait, TTL, slow turns)
//! pass in virtual time, so no test sleeps for real.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use troupe_runtime::{
    AgentError, BuildError, Event, FnAgent, Graph, InboxConfig, Message, Overflow, Router,
    RouterBuilder, RunContext, RunResult, Thread, Workflow,
};

const MINUTE: Duration = Duration::from_secs(60);

/// Fails the test instead of hanging it (in virtual time: a run that
/// never ends would otherwise advance the paused clock forever).
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(24 * 3600), f)
        .await
        .expect("the run hung")
}

/// The texts participant `name` read and said, in its own thread.
fn seen_by(r: &RunResult, name: &str) -> Vec<String> {
    r.thread
        .child(name)
        .map(|t| {
            t.messages()
                .iter()
                .map(|m| m.text_content().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The reasons of the `MessageDropped` events.
fn dropped(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDropped { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn held(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::MessageHeld { .. }))
        .count()
}

/// Says `text`.
fn says(name: &'static str, text: &'static str) -> FnAgent {
    FnAgent::sync(name, move |_: &Thread| Ok(text))
}

/// Says nothing; its thread records what it read.
fn reader(name: &'static str) -> FnAgent {
    FnAgent::sync(name, |_: &Thread| Ok(()))
}

/// Sleeps `wait` (virtual) on its first turn, then says nothing.
fn slow_once(name: &'static str, wait: Duration) -> FnAgent {
    let turns = Arc::new(AtomicUsize::new(0));
    FnAgent::new(name, move |_, _| {
        let first = turns.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                tokio::time::sleep(wait).await;
            }
            Ok::<_, AgentError>(())
        }
    })
}

fn inputs(n: usize) -> Thread {
    Thread::from_messages((0..n).map(|i| Message::user(format!("m{i}"))))
}

async fn run_router(
    agents: Vec<FnAgent>,
    router: RouterBuilder,
    input: Thread,
) -> (RunResult, Vec<Event>) {
    let mut b = Workflow::builder();
    for a in agents {
        b = b.participant(a);
    }
    let wf = b.router(router).build().unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run(input, &ctx)).await.unwrap();
    (
        r,
        events.drain_ready().into_iter().map(|r| r.event).collect(),
    )
}

async fn run_graph(graph: Graph, router: RouterBuilder, input: Thread) -> (RunResult, Vec<Event>) {
    let wf = Workflow::builder()
        .graph(graph)
        .router(router)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run(input, &ctx)).await.unwrap();
    (
        r,
        events.drain_ready().into_iter().map(|r| r.event).collect(),
    )
}

// ---- sender filter ----

#[tokio::test(start_paused = true)]
async fn router_sender_filter_keeps_other_senders_out() {
    let router = Router::builder()
        .add_route("user", "a")
        .add_route("user", "c")
        .add_route("a", "b")
        .output("b")
        .output("c");
    let (r, _) = run_router(
        vec![says("a", "from a"), reader("b"), says("c", "from c")],
        router,
        inputs(1),
    )
    .await;
    assert_eq!(seen_by(&r, "b"), ["from a"]);
}

#[tokio::test(start_paused = true)]
async fn graph_sender_filter_keeps_other_senders_out() {
    let g = Graph::builder()
        .add_agent(says("a", "from a"))
        .add_agent(says("c", "from c"))
        .add_agent(reader("b"))
        .add_edge("a", "c")
        .add_edge("c", "b")
        .build()
        .unwrap();
    // b follows c in the graph, but its inbox takes only a's messages.
    let router = Router::builder()
        .add_route("user", "a")
        .add_route("a", "c")
        .add_route("a", "b");
    let (r, _) = run_graph(g, router, inputs(1)).await;
    assert_eq!(seen_by(&r, "b"), ["from a"]);
    assert_eq!(seen_by(&r, "c"), ["from a", "from c"]);
}

// ---- batch size and max wait ----

#[tokio::test(start_paused = true)]
async fn router_batch_size_groups_messages() {
    let router = Router::builder()
        .add_route_with("user", "b", InboxConfig::new().batch_size(2))
        .output("b");
    let (r, events) = run_router(vec![reader("b")], router, inputs(4)).await;
    let batches: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::AgentStarted { batch, .. } => Some(*batch),
            _ => None,
        })
        .collect();
    assert_eq!(batches, [2, 2]);
    assert_eq!(r.turns, 2);
}

#[tokio::test(start_paused = true)]
async fn router_max_wait_runs_a_partial_batch_when_the_wait_is_over() {
    let ran_at = Arc::new(std::sync::Mutex::new(None));
    let log = ran_at.clone();
    let b = FnAgent::sync("b", move |t: &Thread| {
        *log.lock().unwrap() = Some((Instant::now(), t.len()));
        Ok(())
    });
    let router = Router::builder()
        .add_route_with(
            "user",
            "b",
            InboxConfig::new().batch_size(3).max_wait(10 * MINUTE),
        )
        .output("b");
    let start = Instant::now();
    let (r, _) = run_router(vec![b], router, inputs(1)).await;
    let (at, read) = ran_at.lock().unwrap().expect("b ran");
    // Not flushed at once: the partial batch waited its max wait, in
    // virtual time.
    assert_eq!(at - start, 10 * MINUTE);
    assert_eq!(read, 1);
    assert_eq!(r.turns, 1);
}

#[tokio::test(start_paused = true)]
async fn a_graph_refuses_batch_size_and_max_wait() {
    for (config, setting) in [
        (InboxConfig::new().batch_size(2), "batch_size"),
        (InboxConfig::new().max_wait(MINUTE), "max_wait"),
    ] {
        let g = Graph::builder()
            .add_agent(says("a", "x"))
            .add_agent(reader("b"))
            .add_edge("a", "b")
            .build()
            .unwrap();
        let err = Workflow::builder()
            .graph(g)
            .router(
                Router::builder()
                    .add_route("user", "a")
                    .add_route_with("a", "b", config),
            )
            .build()
            .expect_err("refused");
        assert!(
            matches!(&err, BuildError::InboxSettingInGraph { agent, setting: s } if agent == "b" && *s == setting),
            "{err}"
        );
        assert!(err.to_string().contains("reads its whole inbox"), "{err}");
    }
}

// ---- time-to-live ----

#[tokio::test(start_paused = true)]
async fn router_ttl_expires_a_message_left_waiting() {
    // b waits for a batch of 2 for up to 10 minutes; a's message expires
    // after one minute, so the wait ends with nothing to read.
    let router = Router::builder()
        .add_route("user", "a")
        .add_route_with(
            "a",
            "b",
            InboxConfig::new()
                .batch_size(2)
                .max_wait(10 * MINUTE)
                .ttl(MINUTE),
        )
        .output("b");
    let start = Instant::now();
    let (r, events) = run_router(
        vec![says("a", "soon stale"), reader("b")],
        router,
        inputs(1),
    )
    .await;
    assert!(Instant::now() - start >= 10 * MINUTE);
    assert!(seen_by(&r, "b").is_empty(), "{:?}", seen_by(&r, "b"));
    let reasons = dropped(&events);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].starts_with("expired: age 10m"), "{reasons:?}");
}

#[tokio::test(start_paused = true)]
async fn graph_ttl_expires_a_message_while_other_steps_run() {
    // a → slow → b: a's message to b waits out slow's five minutes.
    let g = Graph::builder()
        .add_agent(says("a", "soon stale"))
        .add_agent(slow_once("slow", 5 * MINUTE))
        .add_agent(reader("b"))
        .add_edge("a", "slow")
        .add_edge("slow", "b")
        .build()
        .unwrap();
    let router = Router::builder().add_route("user", "a").add_route_with(
        "a",
        "b",
        InboxConfig::new().ttl(MINUTE),
    );
    let (r, events) = run_graph(g, router, inputs(1)).await;
    assert!(!seen_by(&r, "b").contains(&"soon stale".to_string()));
    let reasons = dropped(&events);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].starts_with("expired"), "{reasons:?}");
}

/// b is busy for four minutes; meanwhile a says "old" at once and "fresh"
/// three minutes later (after `tick`). b's inbox holds one message with a
/// 150 s time-to-live: when "fresh" arrives "old" has expired, and must
/// not keep it out.
#[tokio::test(start_paused = true)]
async fn router_ttl_purges_before_capacity_is_checked() {
    let a_turns = Arc::new(AtomicUsize::new(0));
    let a = FnAgent::sync("a", move |_: &Thread| {
        Ok(match a_turns.fetch_add(1, Ordering::SeqCst) {
            0 => "old",
            _ => "fresh",
        })
    });
    let tick_turns = Arc::new(AtomicUsize::new(0));
    let tick = FnAgent::new("tick", move |_, _| {
        let first = tick_turns.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if !first {
                return Ok::<_, AgentError>(Vec::new());
            }
            tokio::time::sleep(3 * MINUTE).await;
            Ok(vec![Message::text("tick", "tick")])
        }
    });
    let b_config = InboxConfig::new()
        .capacity(1)
        .overflow(Overflow::DropNewest)
        .ttl(Duration::from_secs(150));
    let router = Router::builder()
        .add_route("user", "a")
        .add_route("a", "tick")
        .add_route("tick", "a")
        .add_route(["user", "a"], "b")
        .inbox("b", b_config)
        .output("b");
    let (r, events) =
        run_router(vec![a, tick, slow_once("b", 4 * MINUTE)], router, inputs(1)).await;
    let b_read = seen_by(&r, "b");
    assert_eq!(b_read, ["m0", "fresh"], "{events:?}");
    let reasons = dropped(&events);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].starts_with("expired: age 3m"), "{reasons:?}");
}

// ---- capacity × overflow ----

fn capped(overflow: Overflow) -> InboxConfig {
    InboxConfig::new().capacity(2).overflow(overflow)
}

#[tokio::test(start_paused = true)]
async fn router_capacity_drop_oldest() {
    let router = Router::builder()
        .add_route_with("user", "b", capped(Overflow::DropOldest))
        .output("b");
    let (r, events) = run_router(vec![reader("b")], router, inputs(3)).await;
    assert_eq!(seen_by(&r, "b"), ["m1", "m2"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop oldest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn router_capacity_drop_newest() {
    let router = Router::builder()
        .add_route_with("user", "b", capped(Overflow::DropNewest))
        .output("b");
    let (r, events) = run_router(vec![reader("b")], router, inputs(3)).await;
    assert_eq!(seen_by(&r, "b"), ["m0", "m1"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop newest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn router_capacity_reject_holds_the_message_until_there_is_room() {
    let router = Router::builder()
        .add_route_with("user", "b", capped(Overflow::Reject))
        .output("b");
    let (r, events) = run_router(vec![reader("b")], router, inputs(3)).await;
    // Nothing lost, order kept: m2 waited outside the full inbox.
    assert_eq!(seen_by(&r, "b"), ["m0", "m1", "m2"]);
    assert!(dropped(&events).is_empty(), "{events:?}");
    assert_eq!(held(&events), 1);
    assert!(r.thread.state().unwrap().pending.is_empty());
}

/// a → b, where b's inbox (fed by the user before the graph reaches it)
/// holds two of the three inputs.
fn capped_graph() -> Graph {
    Graph::builder()
        .add_agent(says("a", "go"))
        .add_agent(reader("b"))
        .add_edge("a", "b")
        .build()
        .unwrap()
}

fn capped_graph_router(overflow: Overflow) -> RouterBuilder {
    Router::builder()
        .add_route("user", "a")
        .add_route_with("user", "b", capped(overflow))
}

#[tokio::test(start_paused = true)]
async fn graph_capacity_drop_oldest() {
    let (r, events) = run_graph(
        capped_graph(),
        capped_graph_router(Overflow::DropOldest),
        inputs(3),
    )
    .await;
    assert_eq!(seen_by(&r, "b"), ["m1", "m2"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop oldest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn graph_capacity_drop_newest() {
    let (r, events) = run_graph(
        capped_graph(),
        capped_graph_router(Overflow::DropNewest),
        inputs(3),
    )
    .await;
    assert_eq!(seen_by(&r, "b"), ["m0", "m1"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop newest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn graph_capacity_reject_holds_the_message_for_the_next_activation() {
    let (r, events) = run_graph(
        capped_graph(),
        capped_graph_router(Overflow::Reject),
        inputs(3),
    )
    .await;
    // b read a full inbox; m2 entered as b took room, and waits there for
    // b's next activation (pending in the thread, never dropped).
    assert_eq!(seen_by(&r, "b"), ["m0", "m1"]);
    assert!(dropped(&events).is_empty(), "{events:?}");
    assert_eq!(held(&events), 1);
    let pending = &r.thread.state().unwrap().pending;
    let b_pending: Vec<_> = pending["b"]
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(b_pending, ["m2"]);
}

#[tokio::test(start_paused = true)]
async fn graph_messages_held_when_the_run_ends_stay_pending_in_order() {
    // b is never activated: its full inbox and the message held outside it
    // are all returned as pending, in arrival order, none dropped.
    let g = Graph::builder()
        .add_agent(says("a", "go"))
        .add_agent(reader("b"))
        .add_transition(
            "a",
            "b",
            troupe_runtime::graph::Condition::text_contains("never"),
        )
        .build()
        .unwrap();
    let (r, events) = run_graph(g, capped_graph_router(Overflow::Reject), inputs(3)).await;
    assert!(seen_by(&r, "b").is_empty());
    assert!(dropped(&events).is_empty(), "{events:?}");
    assert_eq!(held(&events), 1);
    let pending: Vec<_> = r.thread.state().unwrap().pending["b"]
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(pending, ["m0", "m1", "m2"]);
}
