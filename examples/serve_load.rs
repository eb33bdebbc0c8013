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
//! target/release/examples/serve_load [SESSIONS] [TURNS_PER_SESSION]
//! ```
//!
//! The server is `troupe` next to this example's directory
//! (`target/release/troupe`), or the one `TROUPE_BIN` names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::error::Error;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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

fn main() -> Result<(), Box<dyn Error>> {
    let sessions: usize = std::env::args().nth(1).map_or(Ok(1000), |n| n.parse())?;
    let turns: usize = std::env::args().nth(2).map_or(Ok(1), |n| n.parse())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("trio.yaml");
    std::fs::write(&cfg, CONFIG)?;
    let bin = std::env::var_os("TROUPE_BIN").map_or_else(
        || {
            let exe = std::env::current_exe().expect("own path");
            exe.parent()
                .and_then(|d| d.parent())
                .map(|d| d.join("troupe"))
                .unwrap_or_else(|| PathBuf::from("troupe"))
        },
        PathBuf::from,
    );
    let mut server = Command::new(&bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--max-runs"])
        .arg((sessions * 2).to_string())
        .arg(&cfg)
        .env_remove("TROUPE_SERVE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let base = loop {
        let line = lines.next().ok_or("the server exited before listening")??;
        if let Some(at) = line.find("http://") {
            break line[at..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let pid = server.id();
    let rss_idle = rss_kib(pid);

    let rt = tokio::runtime::Runtime::new()?;
    let result = rt.block_on(drive(&base, sessions, turns));
    let rss_after = rss_kib(pid);
    let hwm = peak_kib(pid);
    let _ = server.kill();
    let _ = server.wait();
    let (mut latencies, elapsed) = result?;

    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    let over = |d: Duration| d.saturating_sub(SIMULATED).as_secs_f64() * 1e3;
    let requests = latencies.len();
    println!(
        "sessions: {sessions}, user turns each: {turns}, requests: {requests} (all answered and stored)"
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
        "server RSS: {} KiB idle, {} KiB after (peak {} KiB): {:.1} KiB per session",
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
    base: &str,
    sessions: usize,
    turns: usize,
) -> Result<(Vec<Duration>, Duration), Box<dyn Error>> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(sessions)
        .timeout(Duration::from_secs(600))
        .build()?;
    let base: Arc<str> = base.into();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let (client, base) = (client.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(turns);
            for t in 0..turns {
                let body = json!({"model": "trio", "messages": [{"role": "user", "content": format!("turn {t}")}]});
                let sent = Instant::now();
                let r = client
                    .post(format!("{base}/v1/chat/completions"))
                    .header("X-Troupe-Session", format!("load-{i}"))
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
        .get(format!("{base}/sessions"))
        .send()
        .await?
        .json_text()
        .await?;
    let stored = listed.as_array().map_or(0, Vec::len);
    if stored != sessions {
        return Err(format!("{stored} sessions stored, {sessions} expected").into());
    }
    let short: Vec<&Value> = listed
        .as_array()
        .into_iter()
        .flatten()
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

fn status_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The server's resident memory, KiB.
fn rss_kib(pid: u32) -> u64 {
    status_field(pid, "VmRSS:")
}

/// The server's peak resident memory, KiB.
fn peak_kib(pid: u32) -> u64 {
    status_field(pid, "VmHWM:")
}
