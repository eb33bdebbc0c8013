//! The `serve` workload: a server's own cost per user turn, measured at
//! the client over real HTTP on 127.0.0.1.
//!
//! The server (`--server troupe`, the default, or `langgraph`; see
//! `serve_target.rs`) runs a team of 3 agents that take one turn each per
//! user message, each one call of a scripted model that waits L
//! (`--latency-ms`, default 20) before its fixed reply; the last agent's
//! reply is the answer. So a user turn holds 3 × L of model time, and the
//! answer's first token cannot come before 3 × L either. K sessions
//! (`--k`, default 1) each send `--n` user turns (default 1) one after
//! another, all sessions at once, first not streamed, then (K other
//! sessions) streamed. Each answer is checked, and afterwards every
//! session's stored conversation (4 messages a turn: nothing lost).
//! Before the clock: 5 turns each way on a session of its own (warm-up),
//! and every session made with its own connection open (LangGraph's
//! `POST /threads`; troupe makes a session on its first turn, so its
//! connection is opened by a `GET /v1/models`): the burst measures turns,
//! not the kernel accepting K connections.
//!
//! Fields (ms unless said):
//! - `throughput_turns_s`: user turns answered per second, not streamed
//!   (K × N / the wall time of that phase); `stream_throughput_turns_s`
//!   the same, streamed;
//! - `added_p50_ms`, `added_p99_ms`: per user turn, the client's latency
//!   (request sent → whole answer read) − 3 × L, not streamed;
//!   `stream_added_*` the same, streamed;
//! - `ttft_added_p50_ms`, `ttft_added_p99_ms`: streamed, the client's time
//!   to the answer's first content chunk − 3 × L (the model's own time to
//!   that token);
//! - `kib_per_session`: the server's resident memory (with its children)
//!   after the K unstreamed sessions − before they were made (after the
//!   warm-up), / K;
//!   `server_rss_idle_mib`, `server_peak_mib` beside it;
//!   `anon_kib_per_session` the same of its anonymous memory only (heap
//!   and stacks, `RssAnon`): the program's own code pages, which the
//!   kernel maps in folios of up to 2 MiB, move the first by several KiB a
//!   session from one copy of the binary to another; `server_anon_idle_mib`
//!   beside it;
//! - `server_cpu_us_per_turn`, `client_cpu_us_per_turn`: the CPU time
//!   (user + system, µs) the server (with its children) and this client
//!   used over the unstreamed phase, / its user turns;
//!   `stream_server_cpu_us_per_turn`, `stream_client_cpu_us_per_turn` the
//!   same over the streamed phase. The kernel's work for loopback
//!   connections counts where it ran. With 2 cores, 2 s of CPU a second
//!   is all there is: the sum bounds the throughput.
//!
//! `--server floor` runs the least a server can do for this workload
//! (`serve_floor.rs`): what the client, the kernel and an HTTP stack cost
//! at K sessions here. troupe's figures less the floor's are troupe's own.
//!
//! One session alone (`--k 1 --n 200`) gives the added latency of a turn
//! with nothing else running; `--k 1000 --n 1` the throughput of a burst.
//! `--latency-ms 0` leaves the wait out (troupe's YAML has no `delay`):
//! there the latency is the server's alone, with no timer in it (tokio's
//! and asyncio's timers round a wait up to the next millisecond, so each
//! of the 3 waits may add up to 1 ms to the figures at L > 0).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::BoxError;
use super::serve_proc::{
    cpu_us, quantile, tree_anon_kib, tree_cpu_us, tree_peak_kib, tree_rss_kib,
};
use super::serve_target::{self, Kind, SendError, Timing, session, stored_messages, turn};

/// What to measure.
pub(super) struct Serve {
    /// Concurrent sessions.
    pub k: usize,
    /// User turns per session, one after another.
    pub turns: usize,
    /// The scripted model's wait per call.
    pub latency: Duration,
    /// Which server.
    pub kind: Kind,
    /// troupe's store (`sqlite` or `memory`).
    pub store: String,
}

/// Agent turns (model calls) per user turn.
const AGENTS: u32 = 3;
/// Turns each way before the clock.
const WARMUP: usize = 5;

/// Runs the workload; one JSON line's fields.
pub(super) async fn serve(args: &Serve) -> Result<Value, BoxError> {
    if args.k == 0 || args.turns == 0 {
        return Err("--k and --n must be at least 1".into());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (kind, k, n) = (args.kind, args.k, args.turns);
    let server = serve_target::start(kind, args.latency, &args.store, k).await?;
    let base: Arc<str> = server.base.as_str().into();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(k + 2)
        .timeout(Duration::from_secs(600))
        .build()?;
    let warm = session(kind, &client, &base, "bench-warm")
        .await
        .map_err(|e| e.to_string())?;
    for t in 0..WARMUP {
        for stream in [false, true] {
            turn(kind, &client, &base, &warm, &format!("warm {t}"), stream)
                .await
                .map_err(|e| format!("warm-up: {e}"))?;
        }
    }
    // Memory before the sessions are made (LangGraph's threads count).
    let pid = server.child.id();
    let rss_idle = tree_rss_kib(pid);
    let anon_idle = tree_anon_kib(pid);
    let plain = sessions(kind, &client, &base, "bench-n", k).await?;
    let me = std::process::id();
    let cpu_before = (tree_cpu_us(pid), cpu_us(me));
    let (plain_times, plain_wall) = phase(kind, &client, &base, &plain, n, false).await?;
    let cpu_after = (tree_cpu_us(pid), cpu_us(me));
    let rss_after = tree_rss_kib(pid);
    let anon_after = tree_anon_kib(pid);
    let streamed = sessions(kind, &client, &base, "bench-s", k).await?;
    let stream_before = (tree_cpu_us(pid), cpu_us(me));
    let (stream_times, stream_wall) = phase(kind, &client, &base, &streamed, n, true).await?;
    let stream_after = (tree_cpu_us(pid), cpu_us(me));
    let peak = tree_peak_kib(pid);
    check_stored(kind, &client, &base, plain.iter().chain(&streamed), n).await?;
    let version = server.version.clone();
    drop(server);

    let model = args.latency * AGENTS;
    let added = |times: &[Timing], first: bool| -> Result<Vec<Duration>, BoxError> {
        let mut v = Vec::with_capacity(times.len());
        for t in times {
            let at = if first {
                t.first.ok_or("a streamed answer had no content chunk")?
            } else {
                t.total
            };
            v.push(at.saturating_sub(model));
        }
        v.sort();
        Ok(v)
    };
    let plain_added = added(&plain_times, false)?;
    let stream_added = added(&stream_times, false)?;
    let ttft_added = added(&stream_times, true)?;
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    let requests = (k * n) as f64;
    let throughput = requests / plain_wall.as_secs_f64();
    let per_turn = |before: Option<u64>, after: Option<u64>| match (before, after) {
        (Some(b), Some(a)) => json!(((a.saturating_sub(b)) as f64 / requests).round()),
        _ => Value::Null,
    };
    Ok(json!({
        "bench": "serve",
        "server": match kind { Kind::Troupe => "troupe", Kind::LangGraph => "langgraph", Kind::Floor => "floor" },
        "server_version": version,
        "store": match kind { Kind::Troupe => args.store.as_str(), Kind::LangGraph => "in-memory (langgraph dev)", Kind::Floor => "a locked map" },
        "sessions": k,
        "turns": n,
        "latency_ms": args.latency.as_secs_f64() * 1e3,
        "model_ms": ms(model),
        "requests": k * n,
        "wall_s": plain_wall.as_secs_f64(),
        "throughput_turns_s": throughput.round(),
        "added_p50_ms": ms(quantile(&plain_added, 0.5)),
        "added_p99_ms": ms(quantile(&plain_added, 0.99)),
        "stream_wall_s": stream_wall.as_secs_f64(),
        "stream_throughput_turns_s": (requests / stream_wall.as_secs_f64()).round(),
        "stream_added_p50_ms": ms(quantile(&stream_added, 0.5)),
        "stream_added_p99_ms": ms(quantile(&stream_added, 0.99)),
        "ttft_added_p50_ms": ms(quantile(&ttft_added, 0.5)),
        "ttft_added_p99_ms": ms(quantile(&ttft_added, 0.99)),
        "server_rss_idle_mib": (rss_idle as f64 / 1024.0 * 10.0).round() / 10.0,
        "server_peak_mib": (peak as f64 / 1024.0 * 10.0).round() / 10.0,
        "server_cpu_us_per_turn": per_turn(cpu_before.0, cpu_after.0),
        "client_cpu_us_per_turn": per_turn(cpu_before.1, cpu_after.1),
        "stream_server_cpu_us_per_turn": per_turn(stream_before.0, stream_after.0),
        "stream_client_cpu_us_per_turn": per_turn(stream_before.1, stream_after.1),
        "kib_per_session": (rss_after.saturating_sub(rss_idle) as f64 / k as f64 * 10.0).round() / 10.0,
        "anon_kib_per_session": (anon_after.saturating_sub(anon_idle) as f64 / k as f64 * 10.0).round() / 10.0,
        "server_anon_idle_mib": (anon_idle as f64 / 1024.0 * 10.0).round() / 10.0,
        "all_answered_and_stored": true,
        "figure": throughput.round(),
        "unit": "user turns/s",
    }))
}

/// `k` sessions named `{prefix}{i}`, made at once.
async fn sessions(
    kind: Kind,
    client: &reqwest::Client,
    base: &Arc<str>,
    prefix: &str,
    k: usize,
) -> Result<Vec<String>, BoxError> {
    let mut tasks = Vec::with_capacity(k);
    for i in 0..k {
        let (client, base, name) = (client.clone(), base.clone(), format!("{prefix}{i}"));
        tasks.push(tokio::spawn(async move {
            session(kind, &client, &base, &name).await
        }));
    }
    let mut out = Vec::with_capacity(k);
    for t in tasks {
        out.push(t.await?.map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Every session's turns, all sessions at once: each turn's times and the
/// wall time from the first request to the last answer.
async fn phase(
    kind: Kind,
    client: &reqwest::Client,
    base: &Arc<str>,
    ids: &[String],
    turns: usize,
    stream: bool,
) -> Result<(Vec<Timing>, Duration), BoxError> {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(ids.len());
    for id in ids {
        let (client, base, id) = (client.clone(), base.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(turns);
            for t in 0..turns {
                let timing = turn(kind, &client, &base, &id, &format!("turn {t}"), stream)
                    .await
                    .map_err(|e| format!("session {id} turn {t}: {e}"))?;
                times.push(timing);
            }
            Ok::<_, SendError>(times)
        }));
    }
    let mut all = Vec::with_capacity(ids.len() * turns);
    for t in tasks {
        all.extend(t.await?.map_err(|e| e.to_string())?);
    }
    Ok((all, start.elapsed()))
}

/// Every session holds 4 messages per user turn (the user's, 3 agents').
async fn check_stored(
    kind: Kind,
    client: &reqwest::Client,
    base: &Arc<str>,
    ids: impl Iterator<Item = &String>,
    turns: usize,
) -> Result<(), BoxError> {
    let ids: Vec<String> = ids.cloned().collect();
    let want = (turns * (1 + AGENTS as usize)) as u64;
    // A hundred at a time: the check is not measured.
    for chunk in ids.chunks(100) {
        let mut tasks = Vec::with_capacity(chunk.len());
        for id in chunk {
            let (client, base, id) = (client.clone(), base.clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                let got = stored_messages(kind, &client, &base, &id).await?;
                if got == want {
                    Ok(())
                } else {
                    Err(format!("session {id} holds {got} messages, {want} expected").into())
                }
            }));
        }
        for t in tasks {
            t.await?.map_err(|e: SendError| e.to_string())?;
        }
    }
    Ok(())
}
