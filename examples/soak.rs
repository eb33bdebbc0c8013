//! Soak runs (not in CI; `benches/soak.sh` runs them in release): a long
//! run of each kind that used to grow, watched as it goes — resident
//! memory and time per message in its first tenth against its last.
//!
//! ```text
//! cargo run --release --example soak -- router 1000000 [HISTORY]
//! cargo run --release --example soak -- chat 10000 [8192 [HISTORY]]
//! ```
//!
//! Both keep the last HISTORY messages of each thread
//! (`max_history`, 1,000 by default; `all` keeps everything).
//!
//! - `router N`: a router-only run of N messages between two function
//!   agents with capped inboxes: the client says three things a turn into
//!   the server's inbox of capacity 2 (the oldest dropped), the server
//!   answers one into the client's inbox of capacity 2.
//! - `chat N`: a round-robin group chat of three `ChatAgent`s over a
//!   scripted model that reports a context window of WINDOW tokens
//!   (8,192 by default; the default context then shows the newest
//!   messages that fit), for N turns, checkpointing every turn into a
//!   file store.
//!
//! Each prints one JSON line: per-message time (µs) and RSS (MiB) at the
//! end of the first and the last tenth, and the memory each message added
//! in between (bytes): with `all`, what the run keeps of every message
//! (its thread); with a limit, nothing once the threads are full.

use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use troupe::agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe::presets::RoundRobinGroupChat;
use troupe::store::FileStore;
use troupe::{
    FnAgent, InboxConfig, Message, Reply, Router, RunContext, StopCondition, Thread, Workflow,
};

type BoxError = Box<dyn Error>;

/// Counts messages and notes the time and RSS at each hundredth of `n`.
struct Probe {
    n: u64,
    count: AtomicU64,
    started: Instant,
    /// (messages, seconds since start, RSS in KiB), at each hundredth.
    marks: Mutex<Vec<(u64, f64, f64)>>,
}

impl Probe {
    fn new(n: u64) -> Arc<Self> {
        Arc::new(Probe {
            n,
            count: AtomicU64::new(0),
            started: Instant::now(),
            marks: Mutex::new(vec![(0, 0.0, rss_kib())]),
        })
    }

    /// `k` more messages.
    fn tick(&self, k: u64) {
        let before = self.count.fetch_add(k, Ordering::Relaxed);
        let step = (self.n / 100).max(1);
        if (before + k) / step != before / step {
            let mark = (before + k, self.started.elapsed().as_secs_f64(), rss_kib());
            if let Ok(mut marks) = self.marks.lock() {
                marks.push(mark);
            }
        }
    }

    /// The figures of the first tenth against the last.
    fn report(&self, workload: &str) -> serde_json::Value {
        let marks = self.marks.lock().map(|m| m.clone()).unwrap_or_default();
        let at = |fraction: f64| -> (u64, f64, f64) {
            let goal = (self.n as f64 * fraction) as u64;
            marks
                .iter()
                .copied()
                .find(|m| m.0 >= goal)
                .or_else(|| marks.last().copied())
                .unwrap_or((0, 0.0, 0.0))
        };
        let per_us = |a: (u64, f64, f64), b: (u64, f64, f64)| {
            (b.1 - a.1) * 1e6 / (b.0.saturating_sub(a.0)).max(1) as f64
        };
        let (start, tenth, ninth, end) = (at(0.0), at(0.1), at(0.9), at(1.0));
        let grown = (end.2 - tenth.2) * 1024.0 / (end.0.saturating_sub(tenth.0)).max(1) as f64;
        json!({
            "soak": workload,
            "messages": self.count.load(Ordering::Relaxed),
            "wall_s": round(end.1),
            "first_10pct_us_per_msg": round(per_us(start, tenth)),
            "last_10pct_us_per_msg": round(per_us(ninth, end)),
            "rss_mib_at_10pct": round(tenth.2 / 1024.0),
            "rss_mib_at_90pct": round(ninth.2 / 1024.0),
            "rss_mib_at_end": round(end.2 / 1024.0),
            "bytes_per_msg_after_10pct": round(grown),
        })
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The process's resident set size now, in KiB.
fn rss_kib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}

/// The history limit argument: a number, or `all` for none.
fn history(arg: Option<&String>) -> Result<Option<usize>, BoxError> {
    match arg.map(String::as_str) {
        None => Ok(Some(1_000)),
        Some("all") => Ok(None),
        Some(n) => Ok(Some(n.parse()?)),
    }
}

async fn router(n: u64, history: Option<usize>) -> Result<serde_json::Value, BoxError> {
    let probe = Probe::new(n);
    let (p1, p2) = (probe.clone(), probe.clone());
    let client = FnAgent::sync("client", move |_: &Thread| {
        p1.tick(3);
        Ok(Reply::from(
            (0..3)
                .map(|i| Message::text("client", format!("ping {i}")))
                .collect::<Vec<_>>(),
        ))
    });
    let server = FnAgent::sync("server", move |_: &Thread| {
        p2.tick(1);
        Ok("pong")
    });
    let capped = InboxConfig::new().capacity(2);
    let mut flow = Workflow::builder();
    if let Some(h) = history {
        flow = flow.max_history(h);
    }
    let flow = flow
        .name("soak-router")
        .participant(client)
        .participant(server)
        .router(
            Router::builder()
                .add_route(Router::USER, "client")
                .add_route("client", "server")
                .add_route("server", "client")
                .inbox("server", capped.clone())
                .inbox("client", capped),
        )
        .stop_condition(StopCondition::max_messages(n))
        .build()?;
    let result = flow.run_task("go", &RunContext::new()).await?;
    let mut line = probe.report("router");
    line["thread_len"] = json!(result.thread.len());
    Ok(line)
}

async fn chat(
    turns: u64,
    window: usize,
    history: Option<usize>,
) -> Result<serde_json::Value, BoxError> {
    let probe = Probe::new(turns);
    let dir = tempfile::tempdir()?;
    let store = Arc::new(FileStore::open(dir.path())?);
    let mut team = RoundRobinGroupChat::builder().name("soak-chat");
    if let Some(h) = history {
        team = team.max_history(h);
    }
    for i in 0..3 {
        let p = probe.clone();
        let name = format!("a{i}");
        let model = ScriptedModel::from_fn(move |request| {
            p.tick(1);
            Ok(ScriptedReply::text(format!(
                "a short answer after {} messages",
                request.messages.len()
            )))
        })
        .with_context_window(window)
        .record_requests(false);
        team = team.participant(
            ChatAgent::builder(name)
                .instructions("Answer briefly.")
                .model(model)
                .build()?,
        );
    }
    let team = team
        .stop_condition(StopCondition::max_turns(turns))
        .checkpoint_store(store.clone())
        .build()?;
    let result = team
        .run_task("go", &RunContext::new().with_run_id("soak"))
        .await?;
    let mut line = probe.report("chat");
    line["thread_len"] = json!(result.thread.len());
    line["checkpoint_log_bytes"] = json!(
        std::fs::metadata(store.log_path("soak"))
            .map(|m| m.len())
            .unwrap_or(0)
    );
    Ok(line)
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |default: u64| -> Result<u64, BoxError> {
        Ok(match args.get(1) {
            Some(v) => v.parse()?,
            None => default,
        })
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let line = match args.first().map(String::as_str) {
        Some("router") => runtime.block_on(router(n(1_000_000)?, history(args.get(2))?))?,
        Some("chat") => {
            let window = match args.get(2) {
                Some(v) => v.parse()?,
                None => 8_192,
            };
            runtime.block_on(chat(n(10_000)?, window, history(args.get(3))?))?
        }
        _ => {
            return Err(
                "usage: soak router [N [HISTORY]] | soak chat [TURNS [WINDOW [HISTORY]]]".into(),
            );
        }
    };
    println!("{line}");
    Ok(())
}
