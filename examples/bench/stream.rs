//! The `stream` workload: how long a streamed piece of an answer takes from
//! the model client to the top of a run three levels deep.
//!
//! A server on 127.0.0.1 streams an answer of N pieces in the OpenAI SSE
//! wire format, one every `PACE`. The chat agent runs in a workflow run as
//! the agent of an outer workflow (`outer/inner/writer`); its model is the
//! OpenAI client, wrapped so that each text piece is stamped with an
//! `Instant` when the client's stream yields it. The outer run's
//! `RunStream` reads the pieces' events; each one's latency is the time
//! from its stamp to its arrival there.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use troupe::agents::model::{ChatDelta, ChatStream};
use troupe::agents::{
    ChatAgent, ChatModel, ChatRequest, ChatResponse, ModelError, ModelRetryPolicy, OpenAiClient,
    async_trait,
};
use troupe::{Event, Message, RunContext, Thread, Workflow};

use super::BoxError;

/// The wait between two pieces the server sends.
const PACE: Duration = Duration::from_micros(200);

/// When each text piece left the client, oldest first.
type Stamps = Arc<Mutex<VecDeque<Instant>>>;

/// The client, its text pieces stamped as its stream yields them.
struct Stamped {
    client: OpenAiClient,
    stamps: Stamps,
}

#[async_trait]
impl ChatModel for Stamped {
    fn model_name(&self) -> &str {
        self.client.model_name()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.client.complete(request).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        let stamps = self.stamps.clone();
        let inner = self.client.stream(request).await?;
        Ok(Box::pin(inner.inspect(move |delta| {
            if let Ok(ChatDelta::Text(_)) = delta {
                lock(&stamps).push_back(Instant::now());
            }
        })))
    }
}

fn lock(stamps: &Stamps) -> std::sync::MutexGuard<'_, VecDeque<Instant>> {
    stamps.lock().unwrap_or_else(|p| p.into_inner())
}

/// A server answering every request with `pieces` SSE chunks of text, one
/// every [`PACE`]; its base URL.
fn serve(pieces: u64) -> Result<String, BoxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_nodelay(true);
            let Ok(read_half) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(read_half);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            );
            let chunk = |delta: Value, finish: Value| {
                let c = json!({"object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {c}\n\n")
            };
            for i in 0..pieces {
                let piece = chunk(json!({"content": format!("w{i} ")}), Value::Null);
                if stream.write_all(piece.as_bytes()).is_err() {
                    break;
                }
                std::thread::sleep(PACE);
            }
            let usage =
                json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": pieces}});
            let end = format!(
                "{}data: {usage}\n\ndata: [DONE]\n\n",
                chunk(json!({}), json!("stop"))
            );
            let _ = stream.write_all(end.as_bytes());
        }
    });
    Ok(url)
}

/// Streams an answer of `n` pieces through outer → inner → writer and
/// measures each piece's way from the client to the top-level stream.
pub(super) async fn stream(n: u64) -> Result<Value, BoxError> {
    if n == 0 {
        return Err("--n must be at least 1".into());
    }
    let url = serve(n)?;
    let stamps: Stamps = Arc::default();
    let client = OpenAiClient::builder("bench-model")
        .base_url(url)
        .retry(ModelRetryPolicy::none())
        .build()?;
    let writer = ChatAgent::builder("writer")
        .model(Stamped {
            client,
            stamps: stamps.clone(),
        })
        .build()?;
    let inner = Workflow::builder()
        .name("inner")
        .participant(writer)
        .build()?;
    let outer = Workflow::builder()
        .name("outer")
        .participant(inner)
        .build()?;

    let started = Instant::now();
    let mut run = outer.run_stream(
        Thread::from_messages([Message::user("write")]),
        &RunContext::new(),
    );
    let mut latencies = Vec::with_capacity(n as usize);
    let mut text = String::new();
    while let Some(record) = run.next().await {
        if let Event::TextDelta { path, text: piece } = &record.event {
            let arrived = Instant::now();
            let stamp = lock(&stamps).pop_front();
            let stamp = stamp.ok_or("a piece reached the top without leaving the client")?;
            if &**path != "outer/inner/writer" {
                return Err(format!("a piece came from {path}").into());
            }
            latencies.push(arrived - stamp);
            text.push_str(piece);
        }
    }
    let wall = started.elapsed();
    let result = run.result().await?;
    if latencies.len() as u64 != n || result.final_text() != text {
        return Err(format!(
            "{} of {n} pieces reached the top; they make {} bytes of a {}-byte answer",
            latencies.len(),
            text.len(),
            result.final_text().len()
        )
        .into());
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Ok(json!({
        "bench": "stream",
        "n": n,
        "depth": 3,
        "wall_s": wall.as_secs_f64(),
        "median_us": us(at(0.5)),
        "p99_us": us(at(0.99)),
        "max_us": us(at(1.0)),
        "figure": us(at(0.5)),
        "unit": "µs/delta (client to top-level stream, median)",
    }))
}
