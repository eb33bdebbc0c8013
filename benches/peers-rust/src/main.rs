//! Rust peers of troupe on the shared workloads (`../shared/bench/WORKLOADS.md`),
//! run by `benches/compare.sh` beside troupe's `examples/bench.rs` and the
//! Python peers. Adapted from the scratch program written for this project
//! in `../shared/bench/peers/rust/` (graph-flow, adk-graph, ADK-Rust);
//! AutoAgents is added here.
//!
//! - `chain` (a graph of 10 function nodes in a chain, each passing a string
//!   on) and `fanin` (one node fans out to K nodes that fan in to one) on two
//!   crates with graph workflows of plain async functions: `graph-flow` 0.8.1
//!   (`graph_flow.rs`) and `adk-graph` 2.3.0 (`adk_graph.rs`).
//! - `rr` (a round robin of 3 chat agents, each answering a short fixed text,
//!   until N messages) on ADK-Rust's agents (`adk_rr.rs`: a `LoopAgent` of 3
//!   `LlmAgent`s over a scripted `Llm`) and on AutoAgents 0.4.0
//!   (`autoagents_peer.rs`: 3 actor agents, each a ractor actor hosted by its
//!   `SingleThreadedRuntime`, over a scripted `LLMProvider`, taking turns).
//! - `fan` (a coordinator sends a task to K workers and gathers the K
//!   answers), `pub` (N messages published to one subscriber) and `idle` (K
//!   agents hosted, waiting) on AutoAgents: actor agents whose executor is a
//!   plain function.
//!
//! Measured as troupe's bench measures them: a graph is built once, run once
//! cold and then `--runs` times warm, one at a time; the figure is the median
//! warm run divided by the supersteps (`chain`: µs per superstep, L = 10) or
//! by the node invocations (`fanin`: K + 2); `rr` is the run's wall time over
//! its messages (the task included). `--threads 1` (the default, as
//! `benches/compare.sh` runs troupe) is a tokio current-thread runtime. One
//! JSON line per process, with the fields troupe's bench prints (`figure`,
//! `unit`, `peak_rss_mib`, ...). No model, no network.
//!
//! ```text
//! rustpeers graph-flow chain --runs 200
//! rustpeers graph-flow chain --runs 200 --api runner
//! rustpeers adk-graph chain --runs 200
//! rustpeers graph-flow fanin --k 1000 --runs 10
//! rustpeers adk-graph fanin --k 1000 --runs 10
//! rustpeers adk rr --n 200 --context none
//! rustpeers autoagents rr --n 200
//! rustpeers autoagents rr --n 200 --context window
//! rustpeers autoagents fan --k 1000
//! rustpeers autoagents pub --n 10000
//! rustpeers autoagents idle --k 10000
//! ```

mod adk_graph;
mod adk_rr;
mod autoagents_peer;
mod graph_flow;

use std::error::Error;
use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The allocator troupe's bench uses, so both sides allocate alike.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type BoxError = Box<dyn Error + Send + Sync>;

/// Node invocations, counted to check that every run ran every node.
static INVOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn invoked() {
    INVOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Checks that `runs` warm runs and the cold one made `per_run` invocations each.
fn check_invocations(runs: usize, per_run: usize) -> Result<(), BoxError> {
    let got = INVOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let want = ((runs.max(1) + 1) * per_run) as u64;
    if got != want {
        return Err(format!("{got} node invocations, expected {want}").into());
    }
    Ok(())
}

struct Args {
    framework: String,
    workload: String,
    runs: Option<usize>,
    k: usize,
    length: usize,
    threads: usize,
    api: String,
    n: u64,
    context: String,
}

fn parse_args() -> Result<Args, BoxError> {
    let usage = "usage: rustpeers graph-flow|adk-graph chain|fanin [--runs N] [--k K] \
                 [--length L] [--threads N] [--api engine|runner]; rustpeers adk rr [--n N] [--context default|none]; \
                 rustpeers autoagents rr [--n N] [--context default|window]; rustpeers autoagents fan|idle [--k K]; rustpeers autoagents pub [--n N]";
    let mut it = std::env::args().skip(1);
    let framework = it.next().ok_or(usage)?;
    let workload = it.next().ok_or(usage)?;
    let mut args = Args {
        framework,
        workload,
        runs: None,
        k: 1_000,
        length: 10,
        threads: 1,
        api: "engine".into(),
        n: 2_000,
        context: "default".into(),
    };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--runs" => args.runs = Some(value.parse()?),
            "--k" => args.k = value.parse()?,
            "--length" => args.length = value.parse()?,
            "--threads" => args.threads = value.parse()?,
            "--api" => args.api = value,
            "--n" => args.n = value.parse()?,
            "--context" => args.context = value,
            _ => return Err(format!("unknown flag {flag}; {usage}").into()),
        }
    }
    Ok(args)
}

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let rt = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()?
    };
    let mut line = rt.block_on(run(&args))?;
    if let Value::Object(fields) = &mut line {
        fields.insert(
            "peak_rss_mib".into(),
            json!(round1(peak_rss_kib() / 1024.0)),
        );
        fields.insert("threads".into(), json!(args.threads));
    }
    println!("{line}");
    Ok(())
}

async fn run(args: &Args) -> Result<Value, BoxError> {
    let runs = args.runs.unwrap_or(match args.workload.as_str() {
        "chain" => 200,
        _ => 10,
    });
    match (args.framework.as_str(), args.workload.as_str()) {
        ("graph-flow", "chain") => graph_flow::chain(args.length, runs, &args.api).await,
        ("graph-flow", "fanin") => graph_flow::fanin(args.k, runs).await,
        ("adk-graph", "chain") => adk_graph::chain(args.length, runs).await,
        ("adk-graph", "fanin") => adk_graph::fanin(args.k, runs).await,
        ("adk", "rr") => adk_rr::rr(args.n, &args.context).await,
        ("autoagents", "rr") => autoagents_peer::rr(args.n, &args.context).await,
        ("autoagents", "idle") => autoagents_peer::idle(args.k).await,
        ("autoagents", "fan") => autoagents_peer::fan(args.k).await,
        ("autoagents", "pub") => autoagents_peer::publish(args.n).await,
        (f, w) => Err(format!("no workload {w} for {f}").into()),
    }
}

// ---------------------------------------------------------------- helpers

/// Runs once cold and `runs` times warm, one at a time, as troupe's bench
/// does; the warm times and the cold.
async fn repeat<F, Fut>(runs: usize, mut once: F) -> Result<(Vec<Duration>, Duration), BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    once().await?;
    let cold = started.elapsed();
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        once().await?;
        walls.push(started.elapsed());
    }
    Ok((walls, cold))
}

fn chain_line(length: usize, runs: usize, mut walls: Vec<Duration>, cold: Duration) -> Value {
    let run = median(&mut walls);
    json!({
        "bench": "chain",
        "length": length,
        "runs": runs,
        "cold_run_s": cold.as_secs_f64(),
        "warm_run_s_median": run.as_secs_f64(),
        "wall_s": run.as_secs_f64(),
        "per_superstep_us": us(run) / length as f64,
        "figure": us(run) / length as f64,
        "unit": "µs/superstep",
    })
}

fn fanin_line(
    k: usize,
    runs: usize,
    build: Duration,
    mut walls: Vec<Duration>,
    cold: Duration,
) -> Value {
    let run = median(&mut walls);
    let invocations = k + 2;
    json!({
        "bench": "fanin",
        "k": k,
        "runs": runs,
        "build_s": build.as_secs_f64(),
        "cold_run_s": cold.as_secs_f64(),
        "warm_run_s_median": run.as_secs_f64(),
        "wall_s": run.as_secs_f64(),
        "per_invocation_us": us(run) / invocations as f64,
        "figure": us(run) / invocations as f64,
        "unit": "µs/node invocation",
    })
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The process's peak resident set size, in KiB (VmHWM of /proc/self/status).
fn peak_rss_kib() -> f64 {
    status_kib("VmHWM:")
}

/// The process's resident set size now, in KiB (VmRSS of /proc/self/status).
fn current_rss_kib() -> f64 {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}
