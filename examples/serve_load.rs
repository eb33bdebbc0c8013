//! A load client for `troupe serve` (not run in CI): N concurrent sessions
//! (default 1,000), each a 3-agent round robin over a scripted model that
//! takes 20 ms a call, driven through the OpenAI endpoint with a stored
//! session per client. It starts the server itself, checks every answer
//! and every stored conversation (nothing lost), and prints throughput,
//! the latency overhead over the simulated model time (p50, p99), and the
//! server's resident memory per session.
//!
//! ```text
//! cargo build --release --bin troupe --example serve_load
//! target/release/examples/serve_load [SESSIONS] [TURNS_PER_SESSION] [--workers N --postgres URL]
//! ```
//!
//! With `--postgres URL` the team's store is that PostgreSQL database and
//! `--workers N` servers share it (session i goes to worker i mod N): the
//! throughput of N workers on one database. Its sessions are named after
//! this process, so the database may hold others.
//!
//! The server is `troupe` next to this example's directory
//! (`target/release/troupe`), or the one `TROUPE_BIN` names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::error::Error;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "bench/serve_proc.rs"]
mod serve_proc;
use serve_proc::{peak_kib, quantile, rss_kib, start_troupe_serve, troupe_bin};

/// Three agents take one turn each per user message: 3 calls of 20 ms.
const CONFIG: &str = "version: 1
name: trio
models:
  m: {provider: scripted, delay: 20ms, when_exhausted: cycle}
agents:
  a: {model: m, script: [\"alpha\"]}
  b: {model: m, script: [\"beta\"]}
  c: {model: m, script: [\"gamma\"]}
workflow:
  round_robin:
    participants: [a, b, c]
  max_turns: 3
";

/// The model time a user turn is made of.
const SIMULATED: Duration = Duration::from_millis(60);

/// The command line: positional SESSIONS and TURNS, then `--workers N`
/// and `--postgres URL`.
struct Args {
    sessions: usize,
    turns: usize,
    workers: usize,
    postgres: Option<String>,
}

fn args() -> Result<Args, Box<dyn Error>> {
    let mut positional = Vec::new();
    let (mut workers, mut postgres) = (1, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workers" => workers = it.next().ok_or("--workers needs a number")?.parse()?,
            "--postgres" => postgres = Some(it.next().ok_or("--postgres needs a URL")?),
            _ => positional.push(a),
        }
    }
    if workers > 1 && postgres.is_none() {
        return Err("--workers above 1 needs --postgres URL (the database they share)".into());
    }
    Ok(Args {
        sessions: positional.first().map_or(Ok(1000), |n| n.parse())?,
        turns: positional.get(1).map_or(Ok(1), |n| n.parse())?,
        workers: workers.max(1),
        postgres,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let Args {
        sessions,
        turns,
        workers,
        postgres,
    } = args()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("trio.yaml");
    let store = match postgres {
        Some(_) => "checkpoint:\n  store: postgres\n  url: ${DATABASE_URL}\n",
        None => "",
    };
    std::fs::write(&cfg, format!("{CONFIG}{store}"))?;
    let bin = troupe_bin();
    let mut servers = Vec::new();
    let mut bases = Vec::new();
    let max_runs = vec!["--max-runs".to_string(), (sessions * 2).to_string()];
    let env: Vec<(&str, &str)> = postgres
        .iter()
        .map(|url| ("DATABASE_URL", url.as_str()))
        .collect();
    for _ in 0..workers {
        let (server, base) = start_troupe_serve(&bin, &cfg, &max_runs, &env)?;
        servers.push(server);
        bases.push(base);
    }
    let pids: Vec<u32> = servers.iter().map(Child::id).collect();
    let rss_idle: u64 = pids.iter().map(|p| rss_kib(*p)).sum();

    let rt = tokio::runtime::Runtime::new()?;
    let result = rt.block_on(drive(&bases, sessions, turns));
    let rss_after: u64 = pids.iter().map(|p| rss_kib(*p)).sum();
    let hwm: u64 = pids.iter().map(|p| peak_kib(*p)).sum();
    for mut server in servers {
        let _ = server.kill();
        let _ = server.wait();
    }
    let (mut latencies, elapsed) = result?;

    latencies.sort();
    let pct = |p: f64| quantile(&latencies, p);
    let over = |d: Duration| d.saturating_sub(SIMULATED).as_secs_f64() * 1e3;
    let requests = latencies.len();
    println!(
        "workers: {workers}{}, sessions: {sessions}, user turns each: {turns}, requests: {requests} (all answered and stored)",
        if postgres.is_some() {
            " on PostgreSQL"
        } else {
            ""
        }
    );
    println!("wall time: {:.2} s", elapsed.as_secs_f64());
    println!(
        "throughput: {:.0} user turns/s ({:.0} agent turns/s)",
        requests as f64 / elapsed.as_secs_f64(),
        3.0 * requests as f64 / elapsed.as_secs_f64()
    );
    println!(
        "latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; simulated model time {} ms a turn",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies[requests - 1].as_secs_f64() * 1e3,
        SIMULATED.as_millis()
    );
    println!(
        "overhead over the model time: p50 {:.1} ms, p99 {:.1} ms",
        over(pct(0.5)),
        over(pct(0.99))
    );
    println!(
        "servers' RSS: {} KiB idle, {} KiB after (peak {} KiB): {:.1} KiB per session",
        rss_idle,
        rss_after,
        hwm,
        (rss_after.saturating_sub(rss_idle)) as f64 / sessions as f64
    );
    Ok(())
}

/// Every session's turns, all sessions at once; each request's latency and
/// the wall time.
async fn drive(
    bases: &[String],
    sessions: usize,
    turns: usize,
) -> Result<(Vec<Duration>, Duration), Box<dyn Error>> {
    // Sessions named after this process: a shared database may hold others.
    let prefix: Arc<str> = format!("load-{}-", std::process::id()).into();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(sessions)
        .timeout(Duration::from_secs(600))
        .build()?;
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let base: Arc<str> = bases[i % bases.len()].as_str().into();
        let (client, prefix) = (client.clone(), prefix.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(turns);
            for t in 0..turns {
                let body = json!({"model": "trio", "messages": [{"role": "user", "content": format!("turn {t}")}]});
                let sent = Instant::now();
                let r = client
                    .post(format!("{base}/v1/chat/completions"))
                    .header("X-Troupe-Session", format!("{prefix}{i}"))
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .map_err(|e| format!("session {i}: {e}"))?;
                let status = r.status();
                let text = r.text().await.map_err(|e| format!("session {i}: {e}"))?;
                times.push(sent.elapsed());
                let v: Value = serde_json::from_str(&text).map_err(|e| format!("{status}: {e}: {text}"))?;
                let answer = v["choices"][0]["message"]["content"].as_str().unwrap_or("");
                if answer != "gamma" {
                    return Err(format!("session {i} turn {t}: {status} {text}"));
                }
            }
            Ok::<_, String>(times)
        }));
    }
    let mut all = Vec::with_capacity(sessions * turns);
    for t in tasks {
        all.extend(t.await??);
    }
    let elapsed = start.elapsed();
    // Nothing lost: every conversation is stored with every turn.
    let listed: Value = client
        .get(format!("{}/sessions", bases[0]))
        .send()
        .await?
        .json_text()
        .await?;
    let ours: Vec<&Value> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["id"].as_str().is_some_and(|id| id.starts_with(&*prefix)))
        .collect();
    let stored = ours.len();
    if stored != sessions {
        return Err(format!("{stored} sessions stored, {sessions} expected").into());
    }
    let short: Vec<&Value> = ours
        .into_iter()
        .filter(|s| s["messages"].as_u64() != Some(4 * turns as u64))
        .collect();
    if !short.is_empty() {
        return Err(format!(
            "{} sessions are missing messages: {:?}",
            short.len(),
            short.first()
        )
        .into());
    }
    Ok((all, elapsed))
}

/// `response.text()` parsed as JSON (reqwest is built without its `json`
/// feature).
trait JsonText {
    async fn json_text(self) -> Result<Value, Box<dyn Error>>;
}

impl JsonText for reqwest::Response {
    async fn json_text(self) -> Result<Value, Box<dyn Error>> {
        Ok(serde_json::from_str(&self.text().await?)?)
    }
}
