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
//! target/release/examples/serve_load [SESSIONS] [TURNS_PER_SESSION] [--sqlite] [--delay MS] [--stream] [--workers N --postgres URL]
//! ```
//!
//! `--sqlite` keeps the team's checkpoints and sessions in a SQLite
//! database (in the example's temporary directory) instead of memory.
//! `--delay MS` sets the scripted model's time a call (default 20; with
//! 0 it answers at once, so a turn's latency is all troupe adds: tokio's
//! timer rounds each sleep up to its next millisecond, which the
//! overhead over a non-zero delay counts too). `--stream` sends streamed
//! requests and also reports the time to the first content chunk.
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
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "bench/serve_proc.rs"]
mod serve_proc;
use serve_proc::{peak_kib, rss_kib};

/// Three agents take one turn each per user message: 3 calls of the
/// model's delay (20 ms unless `--delay` says otherwise).
const MODEL: &str = "version: 1
name: trio
models:
  m: {provider: scripted, when_exhausted: cycle";

/// The team, after the model.
const TEAM: &str = "
agents:
  a: {model: m, script: [\"alpha\"]}
  b: {model: m, script: [\"beta\"]}
  c: {model: m, script: [\"gamma\"]}
workflow:
  round_robin:
    participants: [a, b, c]
  max_turns: 3
";

/// The command line: positional SESSIONS and TURNS, then the options.
struct Args {
    sessions: usize,
    turns: usize,
    workers: usize,
    postgres: Option<String>,
    sqlite: bool,
    delay_ms: u64,
    stream: bool,
}

fn args() -> Result<Args, Box<dyn Error>> {
    let mut positional = Vec::new();
    let (mut workers, mut postgres, mut sqlite, mut delay_ms, mut stream) =
        (1, None, false, 20, false);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workers" => workers = it.next().ok_or("--workers needs a number")?.parse()?,
            "--postgres" => postgres = Some(it.next().ok_or("--postgres needs a URL")?),
            "--sqlite" => sqlite = true,
            "--delay" => delay_ms = it.next().ok_or("--delay needs milliseconds")?.parse()?,
            "--stream" => stream = true,
            _ => positional.push(a),
        }
    }
    if sqlite && postgres.is_some() {
        return Err("--sqlite and --postgres: one store or the other".into());
    }
    if workers > 1 && postgres.is_none() {
        return Err("--workers above 1 needs --postgres URL (the database they share)".into());
    }
    Ok(Args {
        sessions: positional.first().map_or(Ok(1000), |n| n.parse())?,
        turns: positional.get(1).map_or(Ok(1), |n| n.parse())?,
        workers: workers.max(1),
        postgres,
        sqlite,
        delay_ms,
        stream,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let Args {
        sessions,
        turns,
        workers,
        postgres,
        sqlite,
        delay_ms,
        stream,
    } = args()?;
    // The model time a user turn is made of: three calls.
    let simulated = Duration::from_millis(3 * delay_ms);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("trio.yaml");
    let store = match (&postgres, sqlite) {
        (Some(_), _) => "checkpoint:\n  store: postgres\n  url: ${DATABASE_URL}\n".to_string(),
        (None, true) => format!(
            "checkpoint: {{store: sqlite, path: \"{}\"}}\n",
            dir.path().join("load.db").display()
        ),
        (None, false) => String::new(),
    };
    let delay = match delay_ms {
        0 => String::new(),
        ms => format!(", delay: {ms}ms"),
    };
    std::fs::write(&cfg, format!("{MODEL}{delay}}}{TEAM}{store}"))?;
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
    let mut servers = Vec::new();
    let mut bases = Vec::new();
    for _ in 0..workers {
        let mut cmd = Command::new(&bin);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--max-runs"])
            .arg((sessions * 2).to_string())
            .arg(&cfg)
            .env_remove("TROUPE_SERVE_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(url) = &postgres {
            cmd.env("DATABASE_URL", url);
        }
        let mut server = cmd
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
        servers.push(server);
        bases.push(base);
    }
    let pids: Vec<u32> = servers.iter().map(Child::id).collect();
    let rss_idle: u64 = pids.iter().map(|p| rss_kib(*p)).sum();

    let rt = tokio::runtime::Runtime::new()?;
    let result = rt.block_on(drive(&bases, sessions, turns, stream));
    let rss_after: u64 = pids.iter().map(|p| rss_kib(*p)).sum();
    let hwm: u64 = pids.iter().map(|p| peak_kib(*p)).sum();
    for mut server in servers {
        let _ = server.kill();
        let _ = server.wait();
    }
    let (mut latencies, mut firsts, elapsed) = result?;

    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    let over = |d: Duration| d.saturating_sub(simulated).as_secs_f64() * 1e3;
    let requests = latencies.len();
    println!(
        "workers: {workers}{}, sessions: {sessions}, user turns each: {turns}, requests: {requests}{} (all answered and stored)",
        if postgres.is_some() {
            " on PostgreSQL"
        } else if sqlite {
            " on SQLite"
        } else {
            " in memory"
        },
        if stream { ", streamed" } else { "" }
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
        simulated.as_millis()
    );
    println!(
        "overhead over the model time: p50 {:.1} ms, p99 {:.1} ms",
        over(pct(0.5)),
        over(pct(0.99))
    );
    if stream {
        firsts.sort();
        let first = |p: f64| firsts[((firsts.len() as f64 - 1.0) * p).round() as usize];
        // The answering agent is the last of three: its first token comes
        // after two whole calls and its own delay.
        println!(
            "first content chunk: p50 {:.3} ms, p99 {:.3} ms (overhead over the model time: p50 {:.3} ms, p99 {:.3} ms)",
            first(0.5).as_secs_f64() * 1e3,
            first(0.99).as_secs_f64() * 1e3,
            over(first(0.5)),
            over(first(0.99))
        );
    }
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
    stream: bool,
) -> Result<(Vec<Duration>, Vec<Duration>, Duration), Box<dyn Error>> {
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
            let mut firsts = Vec::with_capacity(turns);
            for t in 0..turns {
                let body = json!({"model": "trio", "stream": stream, "messages": [{"role": "user", "content": format!("turn {t}")}]});
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
                let (answer, text) = if stream {
                    let (answer, first) = streamed(r).await.map_err(|e| format!("session {i}: {e}"))?;
                    if let Some(first) = first {
                        firsts.push(first - sent);
                    }
                    times.push(sent.elapsed());
                    (answer.clone(), answer)
                } else {
                    let text = r.text().await.map_err(|e| format!("session {i}: {e}"))?;
                    times.push(sent.elapsed());
                    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{status}: {e}: {text}"))?;
                    let answer = v["choices"][0]["message"]["content"].as_str().unwrap_or("").to_string();
                    (answer, text)
                };
                if answer != "gamma" {
                    return Err(format!("session {i} turn {t}: {status} {text}"));
                }
            }
            Ok::<_, String>((times, firsts))
        }));
    }
    let mut all = Vec::with_capacity(sessions * turns);
    let mut all_firsts = Vec::with_capacity(sessions * turns);
    for t in tasks {
        let (times, firsts) = t.await??;
        all.extend(times);
        all_firsts.extend(firsts);
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
    Ok((all, all_firsts, elapsed))
}

/// A streamed answer read to `[DONE]`: its content, and when its first
/// non-empty content chunk arrived.
async fn streamed(mut r: reqwest::Response) -> Result<(String, Option<Instant>), Box<dyn Error>> {
    let (mut answer, mut first, mut pending) = (String::new(), None, String::new());
    while let Some(bytes) = r.chunk().await? {
        pending.push_str(std::str::from_utf8(&bytes)?);
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            let Some(data) = event.trim().strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                return Ok((answer, first));
            }
            let v: Value = serde_json::from_str(data)?;
            if let Some(piece) = v["choices"][0]["delta"]["content"].as_str()
                && !piece.is_empty()
            {
                first.get_or_insert_with(Instant::now);
                answer.push_str(piece);
            }
        }
    }
    Err(format!("the stream ended before [DONE]: {answer}").into())
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
