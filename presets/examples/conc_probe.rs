//! A probe for the `conc` workload (`../shared/bench/WORKLOADS.md`): K
//! concurrent runs of one 3-agent `RoundRobinGroupChat` of `ChatAgent`s over
//! a scripted model that waits L ms per call, each run ending after M
//! messages (the task counts), on a current-thread runtime.
//!
//! ```text
//! cargo build --profile dist -p troupe-presets --example conc_probe
//! target/dist/examples/conc_probe --k 10000 [--m 10] [--latency-ms 20]
//! ```
//!
//! (`dist` is the profile the benchmarks are built with: `release` plus
//! fat LTO; `--release` works too, ~10% slower.)
//!
//! Prints one JSON line: `k`, `wall_s`, `ideal_s`, `ratio`,
//! `rss_per_run_kib` (peak RSS minus the RSS before the runs, over K), and
//! whether every run ended with exactly M messages. Where the bytes go:
//! `valgrind --tool=massif` on it (the workspace forbids `unsafe`, so no
//! counting allocator here). The official figures come from
//! `examples/bench.rs conc` (in the workspace root); this is the tool used to cut them.

use std::error::Error;
use std::time::{Duration, Instant};

use serde_json::json;
use troupe_agents::{ChatAgent, ContextPolicy, ScriptedModel, ScriptedReply};
use troupe_presets::RoundRobinGroupChat;
use troupe_runtime::{RunContext, StopCondition, Workflow};

type BoxError = Box<dyn Error>;

struct Args {
    k: usize,
    m: u64,
    latency: Duration,
}

fn parse_args() -> Result<Args, BoxError> {
    let mut parsed = Args {
        k: 1_000,
        m: 10,
        latency: Duration::from_millis(20),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number: f64 = value.replace('_', "").parse()?;
        match flag.as_str() {
            "--k" => parsed.k = number as usize,
            "--m" => parsed.m = number as u64,
            "--latency-ms" => parsed.latency = Duration::from_secs_f64(number / 1e3),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(parsed)
}

fn chatter(name: &str, latency: Duration) -> Result<ChatAgent, BoxError> {
    let reply = format!("ok from {name}");
    Ok(ChatAgent::builder(name)
        .instructions("Answer briefly.")
        .model(
            ScriptedModel::from_fn(move |_| Ok(ScriptedReply::text(reply.clone())))
                .delay(latency)
                .record_requests(false),
        )
        .context(ContextPolicy::LastN(2))
        .build()?)
}

fn team(m: u64, latency: Duration) -> Result<Workflow, BoxError> {
    Ok(RoundRobinGroupChat::builder()
        .name("conc")
        .participant(chatter("a0", latency)?)
        .participant(chatter("a1", latency)?)
        .participant(chatter("a2", latency)?)
        .stop_condition(StopCondition::max_messages(m))
        .build()?)
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

async fn probe(args: &Args) -> Result<serde_json::Value, BoxError> {
    let team = team(args.m, args.latency)?;
    // Warm-up, outside the clock, as the peers do.
    let warm = team.run_task("go", &RunContext::new()).await?;
    if warm.thread.len() as u64 != args.m {
        return Err(format!("warm-up: {} messages", warm.thread.len()).into());
    }
    drop(warm);
    let rss_before = status_kib("VmRSS:");
    let started = Instant::now();
    let mut handles = Vec::with_capacity(args.k);
    for _ in 0..args.k {
        let team = team.clone();
        handles.push(tokio::spawn(async move {
            let result = team.run_task("go", &RunContext::new()).await;
            (result.map(|r| r.thread.len()), started.elapsed())
        }));
    }
    let spawned = started.elapsed();
    let mut exact = true;
    let mut failed = 0usize;
    let mut ends = Vec::with_capacity(args.k);
    for h in handles {
        let (len, end) = h.await?;
        match len {
            Ok(n) => exact &= n as u64 == args.m,
            Err(_) => failed += 1,
        }
        ends.push(end.as_secs_f64());
    }
    let wall = started.elapsed().as_secs_f64();
    let ideal = (args.m - 1) as f64 * args.latency.as_secs_f64();
    ends.sort_by(f64::total_cmp);
    let rss_peak = status_kib("VmHWM:");
    let k = args.k as f64;
    Ok(json!({
        "bench": "conc_probe",
        "k": args.k,
        "m": args.m,
        "latency_ms": args.latency.as_secs_f64() * 1e3,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "spawn_s": spawned.as_secs_f64(),
        "run_end_min_s": ends.first(),
        "run_end_p50_s": ends.get(ends.len() / 2),
        "rss_before_mib": rss_before / 1024.0,
        "peak_rss_mib": rss_peak / 1024.0,
        "rss_per_run_kib": (rss_peak - rss_before) / k,
        "runs_failed": failed,
        "all_runs_exactly_m": exact && failed == 0,
    }))
}

/// The `troupe` binary's allocator (src/main.rs), so the figures are what
/// it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let line = rt.block_on(probe(&args))?;
    println!("{line}");
    Ok(())
}
