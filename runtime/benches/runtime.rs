//! What the runtime itself costs, with agents that do no work:
//!
//! - `turn/single_run`: a whole run of a one-agent workflow (spawn the run's
//!   supervisor and the agent's actor, one turn, result, teardown);
//! - `turn/ping_pong`: a long run of two agents answering each other, so the
//!   per-turn overhead (schedule, actor message, turn task, routing, stop
//!   check) shows apart from the cost of starting a run;
//! - `router_only/ring`: 1,000 agents passing 100,000 messages;
//! - `spawn`: runs of 10, 100 and 1,000 participants that each run once.
//!
//! Run with `cargo bench -p troupe-runtime --bench runtime`. Figures are
//! recorded in BENCHMARKS.md at the workspace root.

// Bench helpers may fail loudly; criterion_group! defines an undocumented
// public function.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use troupe_runtime::{
    FnAgent, Reply, Router, RouterBuilder, RunContext, RunStatus, StopCondition, Thread, Workflow,
};

/// A multi-thread runtime with one worker per core of the 2-core bench
/// machine, as an application would run troupe.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benches")
}

/// One agent that answers at once, without looking at its thread.
fn single_agent() -> Workflow {
    Workflow::builder()
        .name("single")
        .participant(FnAgent::sync("noop", |_: &Thread| Ok("ok")))
        .build()
        .expect("a valid one-agent workflow")
}

/// Two agents answering each other until `turns` turns were taken.
///
/// `max_messages` counts the input too, so `turns + 1` messages mean exactly
/// `turns` turns: only one turn is ever under way, so the graceful stop
/// cannot overshoot.
fn ping_pong(turns: u64) -> Workflow {
    Workflow::builder()
        .name("rally")
        .participant(FnAgent::sync("ping", |_: &Thread| Ok("ping")))
        .participant(FnAgent::sync("pong", |_: &Thread| Ok("pong")))
        .router(
            Router::builder()
                .add_route("user", "ping")
                .add_route("ping", "pong")
                .add_route("pong", "ping"),
        )
        .stop_condition(StopCondition::max_messages(turns + 1))
        .build()
        .expect("a valid ping-pong workflow")
}

fn turn(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("turn");

    let single = single_agent();
    group.throughput(Throughput::Elements(1));
    group.bench_function("single_run", |b| {
        b.to_async(&rt).iter(|| async {
            let r = single
                .run_task("go", &RunContext::new())
                .await
                .expect("the run succeeds");
            black_box(r.turns)
        });
    });

    // Two lengths: if the per-turn figure grows with the length, some step
    // is linear in the thread (a copy, a scan) and the run is quadratic.
    for turns in [1_000u64, 10_000] {
        let rally = ping_pong(turns);
        let check = rt
            .block_on(rally.run_task("serve", &RunContext::new()))
            .expect("the rally runs");
        assert_eq!(
            check.turns, turns,
            "the stop condition must cut at exactly {turns} turns"
        );
        group.throughput(Throughput::Elements(turns));
        group.bench_with_input(BenchmarkId::new("ping_pong", turns), &rally, |b, rally| {
            b.to_async(&rt).iter(|| async {
                let r = rally
                    .run_task("serve", &RunContext::new())
                    .await
                    .expect("the rally runs");
                black_box(r.turns)
            });
        });
    }
    group.finish();
}

const RING: usize = 1_000;
const HOPS: usize = 100;

/// 1,000 agents in a ring passing exactly 100,000 messages.
///
/// Design: every agent hears the user and its predecessor (`agent-i` hears
/// `agent-(i-1)`, `agent-0` hears `agent-999`), so the one input message
/// starts 1,000 tokens at once and all agents are busy concurrently — a
/// single token would only measure sequential turns, which `ping_pong`
/// already does. Each agent forwards what it receives for its first
/// `HOPS` turns and stays silent after: its private thread holds its inputs
/// and its own replies, so at its k-th turn it holds 2k-1 messages and it
/// answers while that is below `2 * HOPS`. Each of the 1,000 agents thus
/// produces exactly 100 messages, each delivered to exactly one inbox:
/// 100,000 agent-to-agent messages (plus the 1,000 deliveries of the input),
/// 101,000 turns, and the run completes by quiescence. Deciding from the
/// thread rather than a counter keeps the agents stateless, so every run
/// of the bench does the same work; a `max_messages` stop instead would
/// overshoot by the turns under way when it fires, since the graceful stop
/// lets them finish.
fn ring() -> Workflow {
    let names: Vec<String> = (0..RING).map(|i| format!("agent-{i}")).collect();
    let mut router = RouterBuilder::new();
    let mut builder = Workflow::builder().name("ring");
    for (i, name) in names.iter().enumerate() {
        let prev = names[(i + RING - 1) % RING].as_str();
        router = router.add_route(["user", prev], name.as_str());
        builder = builder.participant(FnAgent::sync(name.as_str(), |t: &Thread| {
            Ok(if t.len() < 2 * HOPS {
                Reply::text("hop")
            } else {
                Reply::empty()
            })
        }));
    }
    builder
        .router(router)
        .build()
        .expect("a valid ring workflow")
}

fn router_only(c: &mut Criterion) {
    let rt = runtime();
    let ring = ring();
    let check = rt
        .block_on(ring.run_task("start", &RunContext::new()))
        .expect("the ring runs");
    assert_eq!(check.status, RunStatus::Completed);
    assert_eq!(
        check.messages.len(),
        RING * HOPS,
        "exactly 100,000 messages"
    );
    assert_eq!(check.turns as usize, RING * (HOPS + 1));

    let mut group = c.benchmark_group("router_only");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements((RING * HOPS) as u64));
    group.bench_function("ring/1000_agents_100000_messages", |b| {
        b.to_async(&rt).iter(|| async {
            let r = ring
                .run_task("start", &RunContext::new())
                .await
                .expect("the ring runs");
            black_box(r.messages.len())
        });
    });
    group.finish();
}

/// `n` agents that each answer the user once and are outputs, so a run is
/// mostly starting and stopping `n + 1` actors.
fn fan(n: usize) -> Workflow {
    let mut router = RouterBuilder::new();
    let mut builder = Workflow::builder().name("fan");
    for i in 0..n {
        let name = format!("agent-{i}");
        router = router
            .add_route("user", name.as_str())
            .output(name.as_str());
        builder = builder.participant(FnAgent::sync(name, |_: &Thread| Ok("done")));
    }
    builder
        .router(router)
        .build()
        .expect("a valid fan workflow")
}

fn spawn(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("spawn");
    for n in [10usize, 100, 1_000] {
        let wf = fan(n);
        let check = rt
            .block_on(wf.run_task("go", &RunContext::new()))
            .expect("the fan runs");
        assert_eq!(check.turns as usize, n, "each agent runs once");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("participants", n), &wf, |b, wf| {
            b.to_async(&rt).iter(|| async {
                let r = wf
                    .run_task("go", &RunContext::new())
                    .await
                    .expect("the fan runs");
                black_box(r.turns)
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(15)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = turn, router_only, spawn
}
criterion_main!(benches);
