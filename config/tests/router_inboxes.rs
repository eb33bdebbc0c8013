//! Inbox settings written in YAML (`router.routes[].batch_size`, `ttl`,
//! `capacity`, `overflow`, `max_wait`, `from`): each one built from a
//! config and run with scripted models on tokio's paused clock, and the
//! settings a graph cannot honour refused at their line.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use tokio::time::Instant;
use troupe_config::{BuildOptions, Config};
use troupe_runtime::{Event, Message, RunContext, RunResult, Thread};

const MODELS: &str = "version: 1
models:
  m: {provider: scripted, when_exhausted: repeat_last}
  slow: {provider: scripted, delay: 5m, when_exhausted: repeat_last}
";

/// Fails the test instead of hanging it (the clock is paused: a day of
/// virtual time passes at once).
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(24 * 3600), f)
        .await
        .expect("the run hung")
}

/// Builds `yaml` (after the models) and runs it on `inputs`.
async fn run(yaml: &str, inputs: &[&str]) -> (RunResult, Vec<Event>) {
    let config = Config::parse(&format!("{MODELS}{yaml}"), "t.yaml").unwrap();
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let (ctx, mut events) = RunContext::stream();
    let thread = Thread::from_messages(inputs.iter().map(|t| Message::user(*t)));
    let r = guard(built.workflow.run(thread, &ctx)).await.unwrap();
    (
        r,
        events.drain_ready().into_iter().map(|r| r.event).collect(),
    )
}

/// What participant `name` read, without what it said itself.
fn read_by(r: &RunResult, name: &str) -> Vec<String> {
    r.thread
        .child(name)
        .map(|t| {
            t.messages()
                .iter()
                .filter(|m| &*m.source != name)
                .map(|m| m.text_content().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn dropped(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDropped { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn batches(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::AgentStarted { batch, .. } => Some(*batch),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn from_limits_whose_messages_a_route_takes() {
    let (r, _) = run(
        "agents:
  a: {model: m, script: [from a]}
  c: {model: m, script: [from c]}
  b: {model: m, script: [ok]}
workflow:
  router:
    routes:
      - {from: user, to: a}
      - {from: user, to: c}
      - {from: a, to: b}
    output: [b, c]
",
        &["go"],
    )
    .await;
    assert_eq!(read_by(&r, "b"), ["from a"]);
}

#[tokio::test(start_paused = true)]
async fn batch_size_groups_messages() {
    let (r, events) = run(
        "agents:
  b: {model: m, script: [ok]}
workflow:
  router:
    routes:
      - {from: user, to: b, batch_size: 2}
    output: [b]
",
        &["m0", "m1", "m2", "m3"],
    )
    .await;
    assert_eq!(batches(&events), [2, 2]);
    assert_eq!(r.turns, 2);
}

#[tokio::test(start_paused = true)]
async fn max_wait_runs_a_partial_batch_after_the_wait() {
    let start = Instant::now();
    let (r, events) = run(
        "agents:
  b: {model: m, script: [ok]}
workflow:
  router:
    routes:
      - {from: user, to: b, batch_size: 3, max_wait: 10m}
    output: [b]
",
        &["m0"],
    )
    .await;
    assert_eq!(batches(&events), [1]);
    assert_eq!(r.turns, 1);
    assert!(Instant::now() - start >= Duration::from_secs(600));
}

#[tokio::test(start_paused = true)]
async fn ttl_drops_a_message_that_waited_too_long() {
    // b is busy with the user's message for five minutes; a's reply,
    // meanwhile in b's inbox, lives one minute.
    let (r, events) = run(
        "agents:
  a: {model: m, script: [soon stale]}
  b: {model: slow, script: [done]}
workflow:
  router:
    routes:
      - {from: user, to: a}
      - {from: [user, a], to: b, ttl: 1m}
    output: [b]
",
        &["go"],
    )
    .await;
    assert_eq!(read_by(&r, "b"), ["go"]);
    let reasons = dropped(&events);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].starts_with("expired: age 5m"), "{reasons:?}");
}

async fn overflow(policy: &str) -> (RunResult, Vec<Event>) {
    run(
        &format!(
            "agents:
  b: {{model: m, script: [ok]}}
workflow:
  router:
    routes:
      - {{from: user, to: b, capacity: 2, overflow: {policy}}}
    output: [b]
"
        ),
        &["m0", "m1", "m2"],
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn capacity_with_drop_oldest() {
    let (r, events) = overflow("drop_oldest").await;
    assert_eq!(read_by(&r, "b"), ["m1", "m2"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop oldest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn capacity_with_drop_newest() {
    let (r, events) = overflow("drop_newest").await;
    assert_eq!(read_by(&r, "b"), ["m0", "m1"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop newest)"]
    );
}

#[tokio::test(start_paused = true)]
async fn capacity_with_reject_holds_the_message_until_there_is_room() {
    let (r, events) = overflow("reject").await;
    assert_eq!(read_by(&r, "b"), ["m0", "m1", "m2"]);
    assert!(dropped(&events).is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::MessageHeld { capacity: 2, .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_graph_workflow_honours_capacity_from_its_router() {
    let (r, events) = run(
        "agents:
  a: {model: m, script: [go on]}
  b: {model: m, script: [ok]}
workflow:
  graph:
    nodes: [a, b]
    transitions:
      - {from: a, to: b}
  router:
    routes:
      - {from: user, to: a}
      - {from: user, to: b, capacity: 2, overflow: drop_newest}
",
        &["m0", "m1", "m2"],
    )
    .await;
    assert_eq!(read_by(&r, "b"), ["m0", "m1"]);
    assert_eq!(
        dropped(&events),
        ["inbox full (capacity 2, policy: drop newest)"]
    );
}

#[test]
fn batch_size_and_max_wait_beside_a_graph_or_steps_are_refused_at_their_line() {
    let graph = "agents:
  a: {model: m, script: [x]}
  b: {model: m, script: [y]}
workflow:
  graph:
    nodes: [a, b]
    transitions:
      - {from: a, to: b}
  router:
    routes:
      - {from: user, to: a}
      - from: a
        to: b
        batch_size: 2
        max_wait: 1m
";
    let err = Config::parse(&format!("{MODELS}{graph}"), "t.yaml")
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("t.yaml:18:9: field `workflow.router.routes[1].batch_size`: `batch_size` cannot apply in a workflow with a graph or steps"),
        "{err}"
    );
    assert!(
        err.contains(
            "t.yaml:19:9: field `workflow.router.routes[1].max_wait`: `max_wait` cannot apply"
        ),
        "{err}"
    );

    let steps = "agents:
  a: {model: m, script: [x]}
  b: {model: m, script: [y]}
workflow:
  steps: [{agent: a}, {agent: b}]
  router:
    routes:
      - {from: user, to: a}
      - {from: a, to: b, max_wait: 1m}
";
    let err = Config::parse(&format!("{MODELS}{steps}"), "t.yaml")
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("field `workflow.router.routes[1].max_wait`: `max_wait` cannot apply"),
        "{err}"
    );
    assert!(err.contains("reads its whole inbox"), "{err}");
}
