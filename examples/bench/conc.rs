//! The `conc` workload: K runs at once in one process, each waiting on a
//! model most of the time.
//!
//! One `RoundRobinGroupChat` of 3 `ChatAgent`s (one workflow value) over a
//! scripted model that waits L ms before a short fixed reply; each run ends
//! after M messages, the task included, so it makes M − 1 model calls one
//! after another and cannot end before the ideal (M − 1) × L. All K
//! `run_task`s are spawned at once. Fields as the peers' `conc/*_conc.py`
//! (`_conc_common.summarize`) print them:
//!
//! - `wall_s`: from the first spawn until the last run ends;
//! - `overhead_ratio` = wall / ideal; `overhead_ms` = wall − ideal, the
//!   latency every run of the batch saw on top of the model's;
//!   `overhead_per_run_us` = (wall − ideal) / K, that excess spread over
//!   the runs (a throughput figure);
//! - `kib_per_run` = (peak RSS − RSS just before the runs) / K;
//! - `all_runs_exactly_m`: every run's thread is checked; a run with
//!   another count, or one that fails, fails the workload.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe::agents::{ChatAgent, ContextPolicy, ScriptedModel, ScriptedReply};
use troupe::presets::RoundRobinGroupChat;
use troupe::{RunContext, StopCondition, Workflow};

use super::{BoxError, current_rss_kib, peak_rss_kib, round1, us};

/// What to measure.
pub(super) struct Conc {
    /// Concurrent runs.
    pub k: usize,
    /// Messages per run, the task included.
    pub m: u64,
    /// The model's wait per call.
    pub latency: Duration,
    /// What each chat agent shows its model.
    pub context: ContextPolicy,
}

/// A chat agent whose model waits `latency`, then answers a short text.
fn sleeper(name: &str, args: &Conc) -> Result<ChatAgent, BoxError> {
    let reply = format!("ok from {name}");
    Ok(ChatAgent::builder(name)
        .instructions("Answer briefly.")
        .model(
            ScriptedModel::from_fn(move |_| Ok(ScriptedReply::text(reply.clone())))
                .delay(args.latency)
                // A real client keeps no log of its requests.
                .record_requests(false),
        )
        .context(args.context)
        .build()?)
}

/// Process CPU time (user + system) so far, from /proc/self/stat.
fn cpu_s() -> f64 {
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The fields after the command name (which may hold spaces).
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        })
        .unwrap_or(0.0);
    ticks / 100.0
}

/// Runs the batch; one JSON line's fields.
pub(super) async fn conc(args: &Conc) -> Result<Value, BoxError> {
    if args.k == 0 || args.m < 2 {
        return Err("--k must be at least 1 and --m at least 2".into());
    }
    let team: Workflow = RoundRobinGroupChat::builder()
        .name("conc")
        .participant(sleeper("a0", args)?)
        .participant(sleeper("a1", args)?)
        .participant(sleeper("a2", args)?)
        .stop_condition(StopCondition::max_messages(args.m))
        .build()?;
    // Warm-up, outside the clock, as the peers' scripts do.
    let warm = team.run_task("go", &RunContext::new()).await?;
    if warm.thread.len() as u64 != args.m {
        return Err(format!("warm-up ended with {} messages", warm.thread.len()).into());
    }
    drop(warm);

    let rss_before = current_rss_kib();
    let cpu_before = cpu_s();
    let started = Instant::now();
    let mut handles = Vec::with_capacity(args.k);
    for _ in 0..args.k {
        let team = team.clone();
        handles.push(tokio::spawn(async move {
            let result = team.run_task("go", &RunContext::new()).await;
            (result.map(|r| r.thread.len() as u64), started.elapsed())
        }));
    }
    let mut ends = Vec::with_capacity(args.k);
    let mut counts = std::collections::BTreeMap::<u64, usize>::new();
    let mut errors = Vec::new();
    for handle in handles {
        let (result, end) = handle.await?;
        ends.push(end);
        match result {
            Ok(len) => *counts.entry(len).or_default() += 1,
            Err(e) => errors.push(e.to_string()),
        }
    }
    let wall = started.elapsed();
    let cpu = cpu_s() - cpu_before;
    let ok = counts.get(&args.m).copied().unwrap_or(0);
    if ok != args.k {
        return Err(format!(
            "{ok} of {} runs ended with exactly {} messages (counts: {counts:?}; {} failed{})",
            args.k,
            args.m,
            errors.len(),
            errors
                .first()
                .map_or(String::new(), |e| format!(", the first: {e}"))
        )
        .into());
    }
    ends.sort();
    let at = |q: f64| ends[((ends.len() - 1) as f64 * q).round() as usize].as_secs_f64();
    let ideal = args.latency * (args.m as u32 - 1);
    let excess = wall.as_secs_f64() - ideal.as_secs_f64();
    let replies = (args.k as u64 * (args.m - 1)) as f64;
    let kib_per_run = (peak_rss_kib() - rss_before) / args.k as f64;
    Ok(json!({
        "bench": "conc",
        "k": args.k,
        "m": args.m,
        "latency_ms": us(args.latency) / 1e3,
        "wall_s": wall.as_secs_f64(),
        "ideal_s": ideal.as_secs_f64(),
        "overhead_ratio": wall.as_secs_f64() / ideal.as_secs_f64(),
        "overhead_ms": excess * 1e3,
        "overhead_per_run_us": excess / args.k as f64 * 1e6,
        "runs_per_s": round1(args.k as f64 / wall.as_secs_f64()),
        "cpu_s": cpu,
        "cpu_per_reply_us": cpu / replies * 1e6,
        "run_end_min_s": at(0.0),
        "run_end_p50_s": at(0.5),
        "run_end_p99_s": at(0.99),
        "run_end_max_s": at(1.0),
        "rss_before_mib": round1(rss_before / 1024.0),
        "kib_per_run": round1(kib_per_run),
        "runs_ok": ok,
        "all_runs_exactly_m": true,
        "figure": wall.as_secs_f64() / ideal.as_secs_f64(),
        "unit": "× ideal",
    }))
}
