//! Time to first token through `troupe serve` (not run in CI): what the
//! server adds to a model's own time to first token on a streamed
//! `/v1/chat/completions`.
//!
//! A model server in this process, on 127.0.0.1, speaks the OpenAI SSE wire
//! format (HTTP/1.1 keep-alive, chunked): for each request it notes when the
//! request arrived and when its first token went out, then sends the rest.
//! `troupe serve` runs a one-agent team on it (the agent answers for the
//! team). A client in this process sends N streamed requests one after
//! another over plain TCP and notes when each was sent and when its first
//! content delta arrived. Per request:
//!
//! - overhead = client's time to first token − the model's own (first token
//!   written − request received): everything troupe adds — the HTTP request,
//!   the run, the agent's turn and model call, and the token's way back;
//! - way back = first content delta at the client − first token written by
//!   the model: the streaming path alone.
//!
//! ```text
//! cargo build --release --bin troupe --example serve_ttft
//! target/release/examples/serve_ttft [REQUESTS]
//! ```
//!
//! The server is `troupe` next to this example's directory
//! (`target/release/troupe`), or the one `TROUPE_BIN` names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "bench/serve_proc.rs"]
mod serve_proc;
use serve_proc::{quantile, start_troupe_serve, troupe_bin};

/// Requests before the measured ones (connections, caches, allocator).
const WARMUP: usize = 20;

/// When the model server got a request and wrote its first token.
struct ModelTimes {
    received: Instant,
    first: Instant,
}

fn main() -> Result<(), Box<dyn Error>> {
    let requests: usize = std::env::args().nth(1).map_or(Ok(200), |n| n.parse())?;
    let (times_tx, times) = mpsc::channel();
    let model = model_server(times_tx)?;
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("one.yaml");
    std::fs::write(
        &cfg,
        format!(
            "version: 1
name: one
models:
  live: {{provider: openai, base_url: \"{model}\", model: fake, retries: 1}}
agents:
  writer: {{model: live, instructions: Write.}}
workflow:
  sequential:
    participants: [writer]
  answer: writer
"
        ),
    )?;
    let (mut server, base) = start_troupe_serve(&troupe_bin(), &cfg, &[], &[])?;
    let addr = base.trim_start_matches("http://").to_string();

    let mut overhead = Vec::with_capacity(requests);
    let mut way_back = Vec::with_capacity(requests);
    for i in 0..WARMUP + requests {
        let (sent, first) = ask(&addr)?;
        let model = times.recv_timeout(Duration::from_secs(10))?;
        if i < WARMUP {
            continue;
        }
        let own = model.first - model.received;
        overhead.push((first - sent).saturating_sub(own));
        way_back.push(first.saturating_duration_since(model.first));
    }
    let _ = server.kill();
    let _ = server.wait();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (what, mut v) in [
        ("overhead (client TTFT - model TTFT)", overhead),
        ("way back (model's first token -> client)", way_back),
    ] {
        v.sort();
        let pct = |p: f64| quantile(&v, p);
        println!(
            "{what}: median {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} requests)",
            ms(pct(0.5)),
            ms(pct(0.99)),
            ms(v[v.len() - 1]),
            v.len()
        );
    }
    Ok(())
}

/// One streamed request over a fresh connection: when it was sent and
/// when its first non-empty content delta arrived (the rest is read to
/// `[DONE]`).
fn ask(addr: &str) -> Result<(Instant, Instant), Box<dyn Error>> {
    let body = r#"{"stream": true, "messages": [{"role": "user", "content": "hi"}]}"#;
    let mut conn = TcpStream::connect(addr)?;
    conn.set_nodelay(true)?;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let sent = Instant::now();
    conn.write_all(request.as_bytes())?;
    let mut reader = BufReader::new(conn);
    let mut first = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        if first.is_none() && line.starts_with("data: ") && line.contains("\"content\":\"") {
            if !line.contains("\"content\":\"\"") {
                first = Some(Instant::now());
            }
        } else if line.starts_with("data: [DONE]") {
            break;
        }
    }
    Ok((sent, first.ok_or("no content delta")?))
}

/// The model server; its base URL. Each request is answered with a first
/// token at once, its times sent to `times`, then the rest.
fn model_server(times: mpsc::Sender<ModelTimes>) -> Result<String, Box<dyn Error>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let times = times.clone();
            std::thread::spawn(move || serve_model(conn, &times));
        }
    });
    Ok(url)
}

/// Answers the requests of one keep-alive connection.
fn serve_model(mut conn: TcpStream, times: &mpsc::Sender<ModelTimes>) {
    let _ = conn.set_nodelay(true);
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    loop {
        let mut length = 0usize;
        let mut started = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" && started {
                break;
            }
            started = true;
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let received = Instant::now();
        let chunk = |content: &str, finish: &str| {
            let data = format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}},\"finish_reason\":{finish}}}]}}\n\n"
            );
            format!("{:x}\r\n{data}\r\n", data.len())
        };
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if conn
            .write_all(format!("{head}{}", chunk("Hello", "null")).as_bytes())
            .is_err()
        {
            return;
        }
        let first = Instant::now();
        let _ = times.send(ModelTimes { received, first });
        let done = "data: [DONE]\n\n";
        let tail = format!(
            "{}{}{:x}\r\n{done}\r\n0\r\n\r\n",
            chunk(", world.", "null"),
            chunk("", "\"stop\""),
            done.len()
        );
        if conn.write_all(tail.as_bytes()).is_err() {
            return;
        }
    }
}
