//! Benchmarks of the presets' orchestration overhead, offline: every model
//! is scripted or every agent a plain function, so the time measured is
//! the runtime's own (actors, routing, threads, stop conditions,
//! checkpoints), not a model's.
//!
//! ```text
//! cargo run --release --example bench_presets              # every workload
//! cargo run --release --example bench_presets -- --workload rr_chat
//! cargo run --release --example bench_presets -- --quick   # small sizes (a smoke test)
//! ```
//!
//! It prints one JSON line per measurement: `workload`, `n` (messages, or
//! workers for the map-reduce), `wall_s` (the run only, not building the
//! team), `per_item_us` (`wall_s / n`) and `peak_rss_kib` (VmHWM from
//! /proc/self/status, the whole process's peak). Without `--workload`,
//! each workload runs in a child process of its own, so each peak RSS is
//! that workload's alone.
//!
//! Workloads (sizes match the Python peers' in /work/shared/bench/peers):
//!
//! - `rr_chat`, `rr_chat_last2`: a round robin of 3 ChatAgents with
//!   scripted models, each answering a short fixed text, until 2,000
//!   messages (the task included, as AutoGen's `MaxMessageTermination`
//!   counts). `_last2` shows each model only the last 2 messages
//!   (`ContextPolicy::LastN(2)`, like AutoGen's buffered context); the
//!   other the whole thread.
//! - `selector_fn`, `selector_fn_last2`: a selector group chat of 4
//!   ChatAgents whose next speaker a function picks (round robin on the
//!   previous speaker), until 2,000 messages.
//! - `map_reduce`: a split function, 1,000 function workers in parallel,
//!   a reducer; `n` is the number of workers.
//! - `checkpoint_none`, `checkpoint_memory`, `checkpoint_file`,
//!   `checkpoint_sqlite`: a 10-agent round robin (function agents, the ring
//!   of `examples/bench/ring.rs`, which `bench ckpt` measures in full) until
//!   1,000 messages, checkpointing after every superstep into each store
//!   (none is the baseline). Extra fields: the checkpoints' sizes, the
//!   overhead per superstep against the baseline's median (pass
//!   `--baseline-us` per message to compare within one process tree), and
//!   the time the store alone takes to save the last (largest) checkpoint,
//!   timed directly on the store (median of 10 saves).

use std::error::Error;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe_agents::{ChatAgent, ContextPolicy, ScriptedModel, ScriptedReply};
use troupe_presets::{MapReduce, RoundRobinGroupChat, SelectorGroupChat};
use troupe_runtime::store::{Checkpoint, Durability};
use troupe_runtime::{FnAgent, RunContext, RunResult, StopCondition, Thread, Workflow, codec};

#[path = "bench/ring.rs"]
mod ring;

const WORKLOADS: [&str; 9] = [
    "rr_chat",
    "rr_chat_last2",
    "selector_fn",
    "selector_fn_last2",
    "map_reduce",
    "checkpoint_none",
    "checkpoint_memory",
    "checkpoint_file",
    "checkpoint_sqlite",
];

struct Sizes {
    chat_messages: u64,
    workers: usize,
    checkpoint_messages: u64,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let workload = args
        .iter()
        .position(|a| a == "--workload")
        .and_then(|i| args.get(i + 1).cloned());
    let messages = args
        .iter()
        .position(|a| a == "--messages")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<u64>().ok());
    let mut sizes = if quick {
        Sizes {
            chat_messages: 100,
            workers: 50,
            checkpoint_messages: 50,
        }
    } else {
        Sizes {
            chat_messages: 2_000,
            workers: 1_000,
            checkpoint_messages: 1_000,
        }
    };
    if let Some(n) = messages {
        sizes.checkpoint_messages = n;
    }
    match workload {
        Some(w) => {
            let rt = tokio::runtime::Runtime::new()?;
            let line = rt.block_on(run_workload(&w, &sizes))?;
            println!("{line}");
        }
        None => {
            // One child process per workload: VmHWM is a process-wide
            // high-water mark, so sharing a process would mix the peaks.
            let exe = std::env::current_exe()?;
            for w in WORKLOADS {
                let mut cmd = std::process::Command::new(&exe);
                cmd.args(["--workload", w]);
                if quick {
                    cmd.arg("--quick");
                }
                let status = cmd.status()?;
                if !status.success() {
                    return Err(format!("workload {w} failed: {status}").into());
                }
            }
        }
    }
    Ok(())
}

/// The process's peak resident set size, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn record(workload: &str, n: u64, wall: Duration, extra: Value) -> Value {
    let mut line = json!({
        "workload": workload,
        "n": n,
        "wall_s": wall.as_secs_f64(),
        "per_item_us": wall.as_secs_f64() * 1e6 / n.max(1) as f64,
        "peak_rss_kib": peak_rss_kib(),
    });
    if let (Some(line), Value::Object(extra)) = (line.as_object_mut(), extra) {
        line.extend(extra);
    }
    line
}

async fn timed(team: &Workflow, ctx: &RunContext) -> Result<(RunResult, Duration), Box<dyn Error>> {
    let started = Instant::now();
    let result = team.run_task("go", ctx).await?;
    Ok((result, started.elapsed()))
}

async fn run_workload(workload: &str, sizes: &Sizes) -> Result<Value, Box<dyn Error>> {
    match workload {
        "rr_chat" | "rr_chat_last2" => {
            let n = sizes.chat_messages;
            let context = context_for(workload);
            let team = RoundRobinGroupChat::builder()
                .name("rr")
                .participant(chat_agent("a0", context)?)
                .participant(chat_agent("a1", context)?)
                .participant(chat_agent("a2", context)?)
                .stop_condition(StopCondition::max_messages(n))
                .build()?;
            let (result, wall) = timed(&team, &RunContext::new()).await?;
            check_len(&result, n)?;
            Ok(record(workload, n, wall, json!({"turns": result.turns})))
        }
        "selector_fn" | "selector_fn_last2" => {
            let n = sizes.chat_messages;
            let context = context_for(workload);
            let names: Vec<String> = (0..4).map(|i| format!("a{i}")).collect();
            let mut team = SelectorGroupChat::builder().name("sel");
            for name in &names {
                team = team.participant(chat_agent(name, context)?);
            }
            let team = team
                // AutoGen's benchmark selector: the next one after the
                // previous speaker.
                .selector_fn(|input| {
                    let next = match input.previous {
                        Some(p) => {
                            let i = input.participants.iter().position(|n| n == p)?;
                            (i + 1) % input.participants.len()
                        }
                        None => 0,
                    };
                    Some(input.participants[next].clone())
                })
                .stop_condition(StopCondition::max_messages(n))
                .build()?;
            let (result, wall) = timed(&team, &RunContext::new()).await?;
            check_len(&result, n)?;
            // Turns include the selector's (one per message).
            Ok(record(workload, n, wall, json!({"turns": result.turns})))
        }
        "map_reduce" => {
            let k = sizes.workers;
            let team = MapReduce::builder()
                .name("mr")
                .split(move |_: &Thread| (0..k).map(|i| format!("part {i}")).collect())
                .worker(FnAgent::sync("w", |t: &Thread| {
                    Ok(format!(
                        "done: {}",
                        t.last()
                            .map(|m| m.text_content().into_owned())
                            .unwrap_or_default()
                    ))
                }))
                .reducer(FnAgent::sync("sum", |t: &Thread| {
                    Ok(format!("{} results", t.len()))
                }))
                .build()?;
            let (result, wall) = timed(&team, &RunContext::new()).await?;
            if result.final_text() != format!("{k} results") {
                return Err(format!("map-reduce answered {:?}", result.final_text()).into());
            }
            Ok(record(workload, k as u64, wall, json!({})))
        }
        "checkpoint_none" | "checkpoint_memory" | "checkpoint_file" | "checkpoint_sqlite" => {
            checkpoint_workload(workload, sizes.checkpoint_messages).await
        }
        other => Err(format!(
            "unknown workload '{other}' (known: {})",
            WORKLOADS.join(", ")
        )
        .into()),
    }
}

fn context_for(workload: &str) -> ContextPolicy {
    if workload.ends_with("_last2") {
        ContextPolicy::LastN(2)
    } else {
        ContextPolicy::WholeThread
    }
}

/// A ChatAgent whose scripted model always answers the same short text.
fn chat_agent(name: &str, context: ContextPolicy) -> Result<ChatAgent, Box<dyn Error>> {
    let reply = format!("ok from {name}");
    Ok(ChatAgent::builder(name)
        .instructions("Answer briefly.")
        .model(ScriptedModel::from_fn(move |_| {
            Ok(ScriptedReply::text(reply.clone()))
        }))
        .context(context)
        .build()?)
}

fn check_len(result: &RunResult, n: u64) -> Result<(), Box<dyn Error>> {
    if result.thread.len() as u64 != n {
        return Err(format!("expected {n} messages, got {}", result.thread.len()).into());
    }
    Ok(())
}

async fn checkpoint_workload(workload: &str, n: u64) -> Result<Value, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let store = match workload.strip_prefix("checkpoint_") {
        Some("none") | None => None,
        Some(kind) => Some(ring::open_store(kind, dir.path(), Durability::Process)?),
    };
    let team = ring::ring(n, store.clone())?;
    let ctx = RunContext::new().with_run_id("bench");
    let (result, wall) = timed(&team, &ctx).await?;
    check_len(&result, n)?;
    // One superstep per turn in a ring.
    let supersteps = result.turns;
    let mut extra = json!({"supersteps": supersteps});
    if let Some(store) = store {
        let metas = store.list("bench").await?;
        let sizes: Vec<u64> = metas.iter().map(|m| m.payload_len).collect();
        let total: u64 = sizes.iter().sum();
        // Loading the last checkpoint as a resume does: its chain, folded.
        let started = Instant::now();
        let last = troupe_runtime::store::load_whole(store.as_ref(), "bench", None)
            .await?
            .ok_or("no checkpoint saved")?;
        let load_last = started.elapsed();
        // The store alone, on the largest checkpoint: fresh ids so every
        // save is a new record, as in a run.
        let mut saves = Vec::new();
        for _ in 0..10 {
            let cp = Checkpoint::new(
                "bench-save",
                Some(last.id),
                last.superstep,
                last.topology_hash,
                last.payload.clone(),
            );
            let started = Instant::now();
            store.save(&cp).await?;
            saves.push(started.elapsed());
        }
        saves.sort();
        // Encoding the final thread: most of what the engine encodes.
        let started = Instant::now();
        let encoded = codec::encode(&result.thread)?;
        let encode = started.elapsed();
        extra = json!({
            "supersteps": supersteps,
            "checkpoints": sizes.len(),
            "checkpoint_bytes_first": sizes.first().copied().unwrap_or(0),
            "checkpoint_bytes_last": sizes.last().copied().unwrap_or(0),
            "checkpoint_bytes_total": total,
            "per_superstep_us": wall.as_secs_f64() * 1e6 / supersteps.max(1) as f64,
            "save_last_median_us": saves[saves.len() / 2].as_secs_f64() * 1e6,
            "encode_thread_last_us": encode.as_secs_f64() * 1e6,
            "encoded_thread_last_bytes": encoded.len(),
            "load_last_us": load_last.as_secs_f64() * 1e6,
            "load_last_whole_bytes": last.payload.len(),
        });
    } else if let Some(obj) = extra.as_object_mut() {
        obj.insert(
            "per_superstep_us".into(),
            json!(wall.as_secs_f64() * 1e6 / supersteps.max(1) as f64),
        );
    }
    Ok(record(workload, n, wall, extra))
}
