//! Cassettes through the `troupe` binary: a team run against an
//! OpenAI-format server on 127.0.0.1 with `--record DIR`, the server
//! stopped, `--replay DIR` gives the same thread offline; a secret in the
//! task is not in the cassette; the calculator's call is recorded and
//! answered from the cassette; an agent's instructions changed, the
//! replay fails naming that agent and call, with a diff of the request.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::{produced, text, tool_results, troupe, wait, write};
use serde_json::json;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// An OpenAI-format server: the n-th chat completion answers `answer n`.
struct Server {
    url: String,
    addr: std::net::SocketAddr,
    count: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let count = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped) = (count.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
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
                let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                let body = String::from_utf8_lossy(&body);
                // An agent with tools calls the calculator first.
                let message = if body.contains("\"tools\"") && !body.contains("tool_call_id") {
                    serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_1", "type": "function",
                        "function": {"name": "calculator", "arguments": "{\"expression\":\"6 * 7\"}"}}]})
                } else {
                    serde_json::json!({"role": "assistant", "content": format!("answer {n}")})
                };
                let reply = serde_json::json!({
                    "id": "x", "object": "chat.completion", "model": "fake",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
                })
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        Server {
            url: format!("http://{addr}/v1"),
            addr,
            count,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops listening: the port refuses connections after.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            t.join().expect("the server thread");
        }
    }
}

const SECRET: &str = "tok-4f1e9c2b7d";

fn team(editor_instructions: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: openai, model: fake-model, base_url: \"${{TEST_BASE_URL}}\", api_key_env: TEST_API_KEY, retries: 1}}
agents:
  writer: {{model: m, instructions: Write a first draft., tools: [calculator]}}
  editor: {{model: m, instructions: {editor_instructions}}}
workflow:
  steps: [{{agent: writer}}, {{agent: editor}}]
"
    )
}

fn troupe_run(dir: &std::path::Path, url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = troupe(dir, args);
    cmd.env("TEST_BASE_URL", url)
        .env("TEST_API_KEY", "sk-test-key-never-recorded")
        .env("DEPLOY_TOKEN", SECRET);
    wait(cmd.spawn().expect("start troupe"), Duration::from_secs(30))
}

#[test]
fn a_recorded_run_replays_offline_and_a_changed_agent_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "team.yaml", &team("Tighten it."));
    let cfg = cfg.to_str().expect("utf-8");
    let task = format!("Announce the release; deploy token {SECRET}");
    let mut server = Server::start();
    let url = server.url.clone();
    let recorded = troupe_run(
        dir.path(),
        &url,
        &["run", "--events", "jsonl", "--record", "cas", cfg, &task],
    );
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    assert_eq!(server.count.load(Ordering::SeqCst), 3);
    let thread = produced(&recorded);
    assert_eq!(
        thread.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
        ["answer 2", "answer 3"]
    );
    let tools = tool_results(&recorded);
    assert_eq!(tools.len(), 1, "{tools:?}");

    // The cassette: a line per call, by agent path and index, with timings and
    // usage, and no secret.
    let lines =
        std::fs::read_to_string(dir.path().join("cas/model_calls.jsonl")).expect("cassette");
    assert!(!lines.contains(SECRET), "a secret recorded:\n{lines}");
    assert!(!lines.contains("sk-test-key"), "a key recorded:\n{lines}");
    let entries: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let keys: Vec<(String, u64)> = entries
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap().to_string(),
                e["call"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("workflow/writer".into(), 0),
            ("workflow/writer".into(), 1),
            ("workflow/editor".into(), 0)
        ]
    );
    let tool_lines =
        std::fs::read_to_string(dir.path().join("cas/tool_calls.jsonl")).expect("tool calls");
    let tool: serde_json::Value =
        serde_json::from_str(tool_lines.trim()).expect("one tool call line");
    assert_eq!(
        (&tool["agent"], &tool["call"], &tool["tool"]),
        (&json!("workflow/writer"), &json!(0), &json!("calculator")),
        "{tool}"
    );
    assert!(
        tool["output"].as_str().is_some_and(|o| o.contains("42")),
        "{tool}"
    );
    for e in &entries {
        assert!(e["latency_ms"].as_f64().is_some(), "{e}");
        assert_eq!(e["usage"]["prompt_tokens"], 5, "{e}");
    }
    assert!(lines.contains("[REDACTED]"), "{lines}");

    // The server gone, the replay gives the same thread.
    server.stop();
    assert!(
        std::net::TcpStream::connect(server.addr).is_err(),
        "still listening"
    );
    let replayed = troupe_run(
        dir.path(),
        &url,
        &["run", "--events", "jsonl", "--replay", "cas", cfg, &task],
    );
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        text(&replayed.stderr)
    );
    assert_eq!(produced(&replayed), thread);
    assert_eq!(tool_results(&replayed), tools);
    assert_eq!(
        server.count.load(Ordering::SeqCst),
        3,
        "the replay called out"
    );

    // The editor's instructions changed: its call is not in the cassette.
    let changed = write(dir.path(), "changed.yaml", &team("Make it longer."));
    let out = troupe_run(
        dir.path(),
        &url,
        &[
            "run",
            "-q",
            "--replay",
            "cas",
            changed.to_str().unwrap(),
            &task,
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("agent `workflow/editor` call 0"), "{err}");
    assert!(err.contains("-") && err.contains("Tighten it."), "{err}");
    assert!(
        err.contains("+") && err.contains("Make it longer."),
        "{err}"
    );
    assert!(!err.contains("agent `workflow/writer`"), "{err}");

    // A missing cassette is refused up front.
    let out = troupe_run(dir.path(), &url, &["run", "--replay", "nope", cfg, "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nope"), "{}", text(&out.stderr));
}
