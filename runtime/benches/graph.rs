//! What the graph engine costs, with nodes that do no work:
//!
//! - `graph/chain10`: a whole run of a chain of 10 `FnAgent::sync` nodes,
//!   one node per superstep (the shape LangGraph and MAF were measured on);
//! - `graph/fan_out`: start → K workers → join, for K = 100, 1,000 and
//!   10,000: one superstep of K turns between two supersteps of one;
//! - `graph/loop`: two nodes looping for 200 and 2,000 supersteps, so the
//!   cost of one superstep shows apart from the cost of starting a run (and
//!   two lengths show whether a superstep's cost grows with the run).
//!
//! Criterion's throughput is set to supersteps (chain, loop) or branches
//! (fan-out), so its "thrpt" line gives the per-superstep or per-branch
//! figure; the per-run figure is the "time" line. Sample sizes are small so
//! the whole bench takes about a minute. A fan-out whose one checking run
//! takes over two seconds is reported from that run and not sampled (ten
//! samples at least would take minutes): with a per-run cost that grows
//! with K², K = 10,000 is one such. Figures are in
//! BENCHMARKS.md at the workspace root ("Graph workflows").
//!
//! ```text
//! cargo bench -p troupe-runtime --bench graph
//! ```

// Bench helpers may fail loudly; criterion_group! defines an undocumented
// public function.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use troupe_runtime::{
    FnAgent, Graph, RunContext, RunResult, RunStatus, Thread, Workflow, graph::Condition,
    graph::Join,
};

/// A multi-thread runtime with one worker per core of the 2-core bench
/// machine, as an application would run troupe. Built once per group: a
/// runtime's start-up is not what is measured.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benches")
}

/// A node that answers at once without looking at its thread.
fn noop(name: impl Into<String>) -> FnAgent {
    FnAgent::sync(name, |_: &Thread| Ok("ok"))
}

fn run(rt: &Runtime, wf: &Workflow) -> RunResult {
    rt.block_on(wf.run_task("go", &RunContext::new()))
        .expect("the bench workflow runs")
}

const CHAIN: usize = 10;

/// `n0 → n1 → … → n9`.
fn chain() -> Workflow {
    let mut g = Graph::builder();
    for i in 0..CHAIN {
        g = g.add_agent(noop(format!("n{i}")));
        if i > 0 {
            g = g.add_edge(format!("n{}", i - 1), format!("n{i}"));
        }
    }
    Workflow::builder()
        .name("chain")
        .graph(g.build().expect("a valid chain"))
        .build()
        .expect("a valid chain workflow")
}

/// `start → w0..w(k-1) → join`, the join waiting for every branch.
fn fan_out(k: usize) -> Workflow {
    let mut g = Graph::builder()
        .add_agent(noop("start"))
        .add_agent(noop("join"))
        .join("join", Join::All);
    for i in 0..k {
        let w = format!("w{i}");
        g = g
            .add_agent(noop(w.as_str()))
            .add_edge("start", w.as_str())
            .add_edge(w.as_str(), "join");
    }
    Workflow::builder()
        .name("fan_out")
        .graph(g.build().expect("a valid fan-out"))
        .build()
        .expect("a valid fan-out workflow")
}

/// `ping → pong`, `pong` looping back to `ping` until `rounds` rounds are
/// done: 2 × `rounds` supersteps of one turn each.
///
/// `pong`'s thread holds what `ping` sent it and its own answers, so at its
/// k-th turn it holds 2k − 1 messages; deciding from that rather than from a
/// counter keeps the agents stateless, so every run does the same work.
fn ping_pong(rounds: usize) -> Workflow {
    let pong = FnAgent::sync("pong", move |t: &Thread| {
        Ok(if t.len() < 2 * rounds - 1 {
            "again"
        } else {
            "done"
        })
    });
    let g = Graph::builder()
        .add_agent(noop("ping"))
        .add_agent(pong)
        .add_edge("ping", "pong")
        // The loop limit counts back-edges taken: rounds − 1 of them.
        .add_loop_with_limit(
            "pong",
            "ping",
            Condition::text_contains("again"),
            rounds as u32,
        )
        .build()
        .expect("a valid loop");
    Workflow::builder()
        .name("loop")
        .graph(g)
        .build()
        .expect("a valid loop workflow")
}

fn chain10(c: &mut Criterion) {
    let rt = runtime();
    let wf = chain();
    let check = run(&rt, &wf);
    assert_eq!(check.turns as usize, CHAIN, "each node runs once");

    let mut group = c.benchmark_group("graph");
    group.throughput(Throughput::Elements(CHAIN as u64));
    group.bench_function("chain10", |b| {
        b.to_async(&rt).iter(|| async {
            let r = wf
                .run_task("go", &RunContext::new())
                .await
                .expect("the chain runs");
            black_box(r.turns)
        });
    });
    group.finish();
}

/// A fan-out whose single checking run takes longer than this is timed
/// once and reported instead of sampled: criterion takes at least ten
/// samples, and the whole bench should stay near a minute.
const SAMPLE_LIMIT: Duration = Duration::from_secs(2);

fn fan_out_fan_in(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("graph/fan_out");
    for k in [100usize, 1_000, 10_000] {
        let wf = fan_out(k);
        let started = Instant::now();
        let check = run(&rt, &wf);
        let once = started.elapsed();
        assert_eq!(check.status, RunStatus::Completed);
        assert_eq!(check.turns as usize, k + 2, "start, every worker, join");
        assert_eq!(
            check.thread.child("join").map(Thread::len),
            Some(k + 1),
            "the join's thread holds every branch's message and its own answer"
        );
        if once > SAMPLE_LIMIT {
            println!(
                "graph/fan_out/{k}: one run took {:.2} s ({:.1} µs/branch); \
                 too slow to sample, not measured by criterion",
                once.as_secs_f64(),
                once.as_secs_f64() * 1e6 / k as f64
            );
            continue;
        }
        if k >= 1_000 {
            // Runs of tens to hundreds of milliseconds: the fewest samples
            // criterion allows.
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(5));
        }
        group.throughput(Throughput::Elements(k as u64));
        group.bench_with_input(BenchmarkId::from_parameter(k), &wf, |b, wf| {
            b.to_async(&rt).iter(|| async {
                let r = wf
                    .run_task("go", &RunContext::new())
                    .await
                    .expect("the fan-out runs");
                black_box(r.turns)
            });
        });
    }
    group.finish();
}

fn superstep(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("graph/loop");
    for rounds in [100usize, 1_000] {
        let wf = ping_pong(rounds);
        let check = run(&rt, &wf);
        assert_eq!(check.status, RunStatus::Completed);
        assert_eq!(check.turns as usize, 2 * rounds, "two turns per round");
        assert_eq!(check.final_text(), "done");
        let supersteps = 2 * rounds;
        group.throughput(Throughput::Elements(supersteps as u64));
        group.bench_with_input(BenchmarkId::new("supersteps", supersteps), &wf, |b, wf| {
            b.to_async(&rt).iter(|| async {
                let r = wf
                    .run_task("go", &RunContext::new())
                    .await
                    .expect("the loop runs");
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
        .measurement_time(Duration::from_secs(3));
    targets = chain10, fan_out_fan_in, superstep
}
criterion_main!(benches);
