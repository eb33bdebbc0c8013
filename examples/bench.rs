//! troupe's side of the shared benchmark workloads
//! (`../shared/bench/WORKLOADS.md`), written as a user would write them:
//! presets, graph workflows and routers, with scripted models and plain
//! function agents, so what is measured is orchestration alone.
//!
//! ```text
//! cargo run --release --example bench -- rr --n 2000
//! cargo run --release --example bench -- fan --k 1000
//! cargo run --release --example bench -- chain --runs 200
//! cargo run --release --example bench -- idle --k 100000
//! cargo run --release --example bench -- ckpt --store sqlite --n 1000
//! cargo run --release --example bench -- conc --k 10000 --threads 1
//! cargo build --release --bin troupe --example bench && target/release/examples/bench serve --k 1000
//! ```
//!
//! Each run measures one workload at one size and prints one JSON line
//! with the fields the Python peers' scripts print (`bench`, `framework`,
//! `wall_s`, the per-message or per-step figure, `peak_rss_mib`), plus
//! `figure` and `unit`: the one number `benches/compare.py` sets against
//! the best peer's. One process per configuration, as the peers do, so the
//! peak RSS belongs to that configuration only.
//!
//! | workload | what runs | figure |
//! |---|---|---|
//! | `rr` | `RoundRobinGroupChat` of 3 `ChatAgent`s, scripted models, until N messages | µs per message |
//! | `sel` | `SelectorGroupChat` of 4 `ChatAgent`s, a selector function taking turns | µs per message |
//! | `swarm` | `Swarm` of 2 `ChatAgent`s handing off to each other by tool call | µs per message |
//! | `fan` | `MapReduce`: a split into K parts, K workers, a reducer; second round warm | µs per worker |
//! | `rpc` | two function agents, request and response, one at a time | µs per round trip |
//! | `pub` | one agent publishes N messages; the router delivers each to a subscriber | µs per message |
//! | `chain` | a graph of 10 function nodes in a chain, run many times | µs per superstep |
//! | `fanin` | a graph: one node fans out to K nodes that fan in to one | µs per node invocation |
//! | `idle` | K agents of a running workflow, hosted and waiting for input | KiB per agent |
//! | `idle_spawned` | as `idle`, after one turn each, so every agent's actor is up | KiB per agent |
//! | `ckpt` | the 10-agent ring of function agents, N supersteps, a checkpoint after each into a `--store` (`memory`, `file`, `sqlite`; `--durability process\|fsync`), `--reps` runs with and without | µs per superstep, with minus without (bytes written, last checkpoint, load time too) |
//! | `conc` | K concurrent runs of one `RoundRobinGroupChat` of 3 `ChatAgent`s whose model waits `--latency-ms` (20) per call, each until `--m` (10) messages | wall time / the ideal (M−1)×L (overhead per run, KiB per run too) |
//! | `serve` | `troupe serve` (or `--server langgraph`: LangGraph's Agent Server, `langgraph dev`) on a 3-agent team whose scripted model waits `--latency-ms` (20) a call; K (`--k`, 1) sessions × N (`--n`, 1) user turns over HTTP, unstreamed then streamed (`examples/bench/serve.rs`) | user turns/s (added latency p50/p99, added time to first token, KiB per session too) |
//! | `stream` | a server on 127.0.0.1 streams N pieces (SSE) to a `ChatAgent` in a workflow nested in a workflow | µs per piece, client to top-level stream (median; p99 too) |
//!
//! troupe spawns an agent's actor when the agent first has work, so `idle`
//! measures agents that are hosted but have not run yet; `idle_spawned`
//! the same agents once each has its actor (mailbox and task) waiting.
//!
//! `--context whole` shows the chat agents the whole thread each turn
//! (AutoGen's unbounded context); the default shows the last 2 messages,
//! as the peers' buffered context does. `--threads 1` runs on a
//! current-thread runtime instead of the default multi-thread one.
//!
//! `conc` defaults to K = 1,000; K = 100,000 (`--k 100000`) takes about
//! half a minute and several GB of RAM on today's code. `ckpt` defaults to
//! `--store sqlite --n 1000 --reps 5`.

use std::error::Error;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe::agents::{ChatAgent, ContextPolicy, ScriptedModel, ScriptedReply};
use troupe::presets::{MapReduce, RoundRobinGroupChat, SelectorGroupChat, Swarm};
use troupe::{
    FnAgent, Graph, Reply, Router, RunContext, RunResult, StopCondition, Thread, Workflow,
    graph::Join,
};

#[path = "bench/args.rs"]
mod args;
#[path = "bench/ckpt.rs"]
mod ckpt;
#[path = "bench/conc.rs"]
mod conc;
#[path = "bench/idle.rs"]
mod idle;
#[path = "bench/ring.rs"]
mod ring;
#[path = "bench/serve.rs"]
mod serve;
#[path = "bench/serve_floor.rs"]
mod serve_floor;
#[path = "bench/serve_proc.rs"]
mod serve_proc;
#[path = "bench/serve_target.rs"]
mod serve_target;
#[path = "bench/stream.rs"]
mod stream;

use args::{Args, parse_args};
use idle::{idle, idle_spawned};

const WORKLOADS: [&str; 14] = [
    "rr",
    "sel",
    "swarm",
    "fan",
    "rpc",
    "pub",
    "chain",
    "fanin",
    "idle",
    "idle_spawned",
    "stream",
    "ckpt",
    "conc",
    "serve",
];

type BoxError = Box<dyn Error>;

/// The `troupe` binary's allocator (src/main.rs), so the figures are what
/// it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let rt = match args.threads {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()?,
        None => tokio::runtime::Runtime::new()?,
    };
    let mut line = rt.block_on(run(&args))?;
    if let Value::Object(fields) = &mut line {
        // The serve workload names the server it measured.
        let framework = fields.get("server").cloned().unwrap_or(json!("troupe"));
        fields.insert("framework".into(), framework);
        fields.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        fields.insert(
            "peak_rss_mib".into(),
            json!(round1(peak_rss_kib() / 1024.0)),
        );
        fields.insert(
            "threads".into(),
            json!(args.threads.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, usize::from)
            })),
        );
    }
    println!("{line}");
    Ok(())
}

async fn run(args: &Args) -> Result<Value, BoxError> {
    match args.workload.as_str() {
        "rr" => rr(args.n.unwrap_or(2_000), context(args)).await,
        "sel" => sel(args.n.unwrap_or(2_000), context(args)).await,
        "swarm" => swarm(args.n.unwrap_or(2_000), context(args)).await,
        "fan" => fan(args.k.unwrap_or(1_000)).await,
        "rpc" => rpc(args.n.unwrap_or(100_000)).await,
        "pub" => publish(args.n.unwrap_or(100_000)).await,
        "chain" => chain(10, args.runs.unwrap_or(200)).await,
        "fanin" => fanin(args.k.unwrap_or(1_000), args.runs.unwrap_or(10)).await,
        "idle" => idle(args.k.unwrap_or(100_000)).await,
        "idle_spawned" => idle_spawned(args.k.unwrap_or(100_000)).await,
        "stream" => stream::stream(args.n.unwrap_or(2_000)).await,
        "serve_floor" => serve_floor::serve_floor(args).await, // `serve --server floor`'s server
        "ckpt" => {
            ckpt::ckpt(&ckpt::Ckpt {
                n: args.n.unwrap_or(1_000),
                store: &args.store,
                durability: &args.durability,
                reps: args.reps,
            })
            .await
        }
        "conc" => {
            conc::conc(&conc::Conc {
                k: args.k.unwrap_or(1_000),
                m: args.m,
                latency: Duration::from_secs_f64(args.latency_ms / 1e3),
                context: context(args),
            })
            .await
        }
        "serve" => {
            serve::serve(&serve::Serve {
                k: args.k.unwrap_or(1),
                turns: args.n.unwrap_or(1) as usize,
                latency: Duration::from_secs_f64(args.latency_ms / 1e3),
                kind: serve_target::Kind::parse(&args.server)?,
                store: args.store.clone(),
            })
            .await
        }
        other => Err(format!(
            "unknown workload '{other}' (known: {})",
            WORKLOADS.join(", ")
        )
        .into()),
    }
}

fn context(args: &Args) -> ContextPolicy {
    if args.whole_context {
        ContextPolicy::WholeThread
    } else {
        ContextPolicy::LastN(2)
    }
}

fn context_name(context: ContextPolicy) -> &'static str {
    match context {
        ContextPolicy::WholeThread => "whole",
        _ => "buffered",
    }
}

// ---------------------------------------------------------------- presets

/// A chat agent whose scripted model answers the same short text.
fn chatter(name: &str, context: ContextPolicy) -> Result<ChatAgent, BoxError> {
    let reply = format!("ok from {name}");
    Ok(ChatAgent::builder(name)
        .instructions("Answer briefly.")
        .model(ScriptedModel::from_fn(move |_| {
            Ok(ScriptedReply::text(reply.clone()))
        }))
        .context(context)
        .build()?)
}

async fn rr(n: u64, context: ContextPolicy) -> Result<Value, BoxError> {
    let team = RoundRobinGroupChat::builder()
        .name("rr")
        .participant(chatter("a0", context)?)
        .participant(chatter("a1", context)?)
        .participant(chatter("a2", context)?)
        .stop_condition(StopCondition::max_messages(n))
        .build()?;
    let (result, wall) = timed(&team).await?;
    expect_len(&result, n)?;
    Ok(per_message("rr", n, wall, context))
}

async fn sel(n: u64, context: ContextPolicy) -> Result<Value, BoxError> {
    let mut team = SelectorGroupChat::builder().name("sel");
    for i in 0..4 {
        team = team.participant(chatter(&format!("a{i}"), context)?);
    }
    let team = team
        // As the peers' selector function: the one after the previous speaker.
        .selector_fn(|input| {
            let next = match input.previous {
                Some(previous) => {
                    let i = input.participants.iter().position(|n| n == previous)?;
                    (i + 1) % input.participants.len()
                }
                None => 0,
            };
            input.participants.get(next).cloned()
        })
        .stop_condition(StopCondition::max_messages(n))
        .build()?;
    let (result, wall) = timed(&team).await?;
    expect_len(&result, n)?;
    Ok(per_message("sel", n, wall, context))
}

async fn swarm(n: u64, context: ContextPolicy) -> Result<Value, BoxError> {
    let agent = |me: &str, other: &'static str| -> Result<ChatAgent, BoxError> {
        Ok(ChatAgent::builder(me)
            .instructions("Hand the conversation to the other agent.")
            .model(ScriptedModel::from_fn(move |_| {
                Ok(ScriptedReply::handoff(other, "your turn"))
            }))
            .handoff(other)
            .context(context)
            .build()?)
    };
    let team = Swarm::builder()
        .name("swarm")
        .participant(agent("alice", "bob")?)
        .participant(agent("bob", "alice")?)
        .stop_condition(StopCondition::max_messages(n))
        .build()?;
    let (result, wall) = timed(&team).await?;
    expect_len(&result, n)?;
    let handoffs = result
        .thread
        .messages()
        .iter()
        .filter(|m| m.handoff_target().is_some())
        .count() as u64;
    if handoffs != n - 1 {
        return Err(format!("expected {} handoffs, got {handoffs}", n - 1).into());
    }
    let mut line = per_message("swarm", n, wall, context);
    line["handoffs"] = json!(handoffs);
    Ok(line)
}

async fn fan(k: usize) -> Result<Value, BoxError> {
    let rss_before = current_rss_kib();
    let started = Instant::now();
    let team = MapReduce::builder()
        .name("fan")
        .split(move |_: &Thread| (0..k).map(|i| format!("task {i}")).collect())
        .worker(FnAgent::sync("worker", |t: &Thread| {
            Ok(t.last().map_or(0, |m| m.text_content().len()).to_string())
        }))
        .reducer(FnAgent::sync("gather", |t: &Thread| {
            // Every worker's reply, summed, as the peers' coordinator does.
            let sum: usize = t
                .messages()
                .iter()
                .filter_map(|m| m.text_content().parse::<usize>().ok())
                .sum();
            Ok(sum.to_string())
        }))
        .build()?;
    let setup = started.elapsed();
    let expected: usize = (0..k).map(|i| format!("task {i}").len()).sum();
    let round = || async {
        let started = Instant::now();
        let result = team.run_task("go", &RunContext::new()).await?;
        let wall = started.elapsed();
        if result.final_text() != expected.to_string() {
            return Err::<Duration, BoxError>(
                format!("gathered {:?}, expected {expected}", result.final_text()).into(),
            );
        }
        Ok(wall)
    };
    let cold = round().await?;
    // The peak during the cold round: troupe's agents live for a run.
    let per_agent_kib = (peak_rss_kib() - rss_before) / k as f64;
    let mut warm = Vec::new();
    for _ in 0..3 {
        warm.push(round().await?);
    }
    let warm = median(&mut warm);
    Ok(json!({
        "bench": "fan",
        "k": k,
        "setup_s": setup.as_secs_f64(),
        "cold_wall_s": cold.as_secs_f64(),
        "warm_wall_s_median": warm.as_secs_f64(),
        "wall_s": warm.as_secs_f64(),
        "cold_per_worker_us": us(cold) / k as f64,
        "warm_per_worker_us": us(warm) / k as f64,
        "rss_per_agent_kib": round1(per_agent_kib),
        "figure": us(warm) / k as f64,
        "unit": "µs/worker",
    }))
}

// ----------------------------------------------------- runtime, by hand

async fn rpc(n: u64) -> Result<Value, BoxError> {
    let pair = Workflow::builder()
        .name("rpc")
        .participant(FnAgent::sync("client", |_: &Thread| Ok("ping")))
        .participant(FnAgent::sync("server", |_: &Thread| Ok("pong")))
        .router(
            Router::builder()
                .add_route(Router::USER, "client")
                .add_route("client", "server")
                .add_route("server", "client"),
        )
        // The task counts as a message; each round trip adds two.
        .stop_condition(StopCondition::max_messages(2 * n + 1))
        .build()?;
    let (result, wall) = timed(&pair).await?;
    expect_len(&result, 2 * n + 1)?;
    Ok(json!({
        "bench": "rpc",
        "n": n,
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / n as f64,
        "figure": us(wall) / n as f64,
        "unit": "µs/round trip",
    }))
}

async fn publish(n: u64) -> Result<Value, BoxError> {
    let publisher = FnAgent::sync("publisher", move |_: &Thread| {
        Ok(Reply::from(
            (0..n)
                .map(|i| troupe::Message::text("publisher", format!("event {i}")))
                .collect::<Vec<_>>(),
        ))
    });
    let subscriber = FnAgent::sync("subscriber", |_: &Thread| Ok(Reply::empty()));
    let flow = Workflow::builder()
        .name("pub")
        .participant(publisher)
        .participant(subscriber)
        .router(
            Router::builder()
                .add_route(Router::USER, "publisher")
                .add_route("publisher", "subscriber")
                // The subscriber consumes; it sends nothing on.
                .output("subscriber"),
        )
        .build()?;
    let (result, wall) = timed(&flow).await?;
    expect_len(&result, n + 1)?;
    // One publisher turn, one subscriber turn per message.
    if result.turns != n + 1 {
        return Err(format!("expected {} turns, got {}", n + 1, result.turns).into());
    }
    Ok(json!({
        "bench": "pub",
        "n": n,
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / n as f64,
        "figure": us(wall) / n as f64,
        "unit": "µs/message",
    }))
}

/// A node passing the last message's text on, tagged with its name.
fn pass_on(name: String) -> FnAgent {
    FnAgent::sync(name, |t: &Thread| {
        Ok(t.last()
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default())
    })
}

async fn chain(length: usize, runs: usize) -> Result<Value, BoxError> {
    let names: Vec<String> = (0..length).map(|i| format!("n{i}")).collect();
    let mut graph = Graph::builder().start(names[0].clone());
    for name in &names {
        graph = graph.add_agent(pass_on(name.clone()));
    }
    for pair in names.windows(2) {
        graph = graph.add_edge(pair[0].clone(), pair[1].clone());
    }
    let flow = Workflow::builder()
        .name("chain")
        .graph(graph.build()?)
        .build()?;
    let expect = |result: &RunResult| -> Result<(), BoxError> {
        if result.turns != length as u64 || result.final_text() != "x" {
            return Err(format!(
                "chain ran {} turns: {:?}",
                result.turns,
                result.final_text()
            )
            .into());
        }
        Ok(())
    };
    let (walls, cold) = repeat(&flow, runs, expect).await?;
    let mut walls = walls;
    let run = median(&mut walls);
    Ok(json!({
        "bench": "chain",
        "length": length,
        "runs": runs,
        "cold_run_s": cold.as_secs_f64(),
        "warm_run_s_median": run.as_secs_f64(),
        "wall_s": run.as_secs_f64(),
        "per_superstep_us": us(run) / length as f64,
        "per_invocation_us": us(run) / length as f64,
        "figure": us(run) / length as f64,
        "unit": "µs/superstep",
    }))
}

async fn fanin(k: usize, runs: usize) -> Result<Value, BoxError> {
    let building = Instant::now();
    let mut graph = Graph::builder()
        .start("source")
        .add_agent(FnAgent::sync("source", |_: &Thread| Ok("x")))
        .add_agent(FnAgent::sync("sink", |t: &Thread| {
            Ok(t.messages()
                .iter()
                .filter(|m| &*m.source != "source")
                .count()
                .to_string())
        }))
        .join("sink", Join::All);
    for i in 0..k {
        let name = format!("b{i}");
        graph = graph
            .add_agent(pass_on(name.clone()))
            .add_edge("source", name.clone())
            .add_edge(name, "sink");
    }
    let flow = Workflow::builder()
        .name("fanin")
        .graph(graph.build()?)
        .build()?;
    let build = building.elapsed();
    let invocations = k + 2;
    let expect = |result: &RunResult| -> Result<(), BoxError> {
        if result.turns != invocations as u64 {
            return Err(
                format!("fan-in ran {} turns, expected {invocations}", result.turns).into(),
            );
        }
        Ok(())
    };
    let (mut walls, cold) = repeat(&flow, runs, expect).await?;
    let run = median(&mut walls);
    Ok(json!({
        "bench": "fanin",
        "k": k,
        "runs": runs,
        "build_s": build.as_secs_f64(),
        "cold_run_s": cold.as_secs_f64(),
        "warm_run_s_median": run.as_secs_f64(),
        "wall_s": run.as_secs_f64(),
        "per_superstep_us": us(run) / 3.0,
        "per_invocation_us": us(run) / invocations as f64,
        "figure": us(run) / invocations as f64,
        "unit": "µs/node invocation",
    }))
}

// ---------------------------------------------------------------- helpers

async fn timed(team: &Workflow) -> Result<(RunResult, Duration), BoxError> {
    let started = Instant::now();
    let result = team.run_task("go", &RunContext::new()).await?;
    Ok((result, started.elapsed()))
}

/// Runs `flow` once cold and `runs` times warm; the warm times and the cold.
async fn repeat(
    flow: &Workflow,
    runs: usize,
    check: impl Fn(&RunResult) -> Result<(), BoxError>,
) -> Result<(Vec<Duration>, Duration), BoxError> {
    let ctx = RunContext::new();
    let once = || async {
        let started = Instant::now();
        let result = flow.run_task("x", &ctx).await?;
        let wall = started.elapsed();
        check(&result)?;
        Ok::<Duration, BoxError>(wall)
    };
    let cold = once().await?;
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        walls.push(once().await?);
    }
    Ok((walls, cold))
}

fn per_message(bench: &str, n: u64, wall: Duration, context: ContextPolicy) -> Value {
    json!({
        "bench": bench,
        "n": n,
        "context": context_name(context),
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / n as f64,
        "msgs_per_s": n as f64 / wall.as_secs_f64(),
        "figure": us(wall) / n as f64,
        "unit": "µs/message",
    })
}

fn expect_len(result: &RunResult, n: u64) -> Result<(), BoxError> {
    if result.thread.len() as u64 != n {
        return Err(format!("expected {n} messages, got {}", result.thread.len()).into());
    }
    Ok(())
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

/// A field of /proc/self/status, in KiB.
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

/// The process's peak resident set size so far.
fn peak_rss_kib() -> f64 {
    status_kib("VmHWM:")
}

/// The process's resident set size now.
fn current_rss_kib() -> f64 {
    status_kib("VmRSS:")
}
