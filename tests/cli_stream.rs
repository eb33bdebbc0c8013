//! `troupe run` against an OpenAI-compatible server on 127.0.0.1 that
//! streams its answers in the real SSE wire format: the tokens appear on
//! stdout while the model is still answering, `--events jsonl` carries
//! them as `text_delta` lines, and `stream:` in the YAML (or, unset,
//! whether anybody watches) decides whether the model is asked to stream.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{jsonl, lines, result_line, text, troupe, wait, write};
use serde_json::{Value, json};

/// The streamed answer, in the pieces the server sends.
const PIECES: [&str; 3] = ["Hello there,\n", "streaming ", "world."];

fn config(stream: Option<bool>) -> String {
    let stream = stream.map_or(String::new(), |s| format!("    stream: {s}\n"));
    format!(
        "version: 1\nname: live\nmodels:\n  m:\n    provider: openai\n    model: fake-model\n    retries: 1\n{stream}agents:\n  writer:\n    model: m\n    instructions: Greet.\nworkflow:\n  sequential:\n    participants: [writer]\n"
    )
}

/// A server answering each request with [`PIECES`]: as SSE when asked to
/// stream (waiting for `gate` after the first piece, if given), else as
/// one JSON body. It records the request bodies.
struct Server {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn serve(gate: Option<mpsc::Receiver<()>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
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
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let streamed = body["stream"] == true;
            seen.lock().unwrap().push(body);
            if !streamed {
                let reply = json!({
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": PIECES.concat()}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3}
                })
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
                continue;
            }
            // No length: the body runs until the connection closes.
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            );
            let chunk = |delta: Value, finish: Value| {
                let c = json!({"object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {c}\n\n")
            };
            for (i, piece) in PIECES.iter().enumerate() {
                let _ = stream.write_all(chunk(json!({"content": piece}), Value::Null).as_bytes());
                let _ = stream.flush();
                if i == 0
                    && let Some(gate) = &gate
                {
                    let _ = gate.recv_timeout(Duration::from_secs(20));
                }
            }
            let usage =
                json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 4}});
            let end = format!(
                "{}data: {usage}\n\ndata: [DONE]\n\n",
                chunk(json!({}), json!("stop"))
            );
            let _ = stream.write_all(end.as_bytes());
        }
    });
    Server { url, bodies }
}

#[test]
fn tokens_are_printed_as_they_stream_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "live.yaml", &config(Some(true)));
    let (open, gate) = mpsc::channel();
    let server = serve(Some(gate));
    let mut child = troupe(dir.path(), &["run", cfg.to_str().unwrap(), "greet me"])
        .env("OPENAI_BASE_URL", &server.url)
        .spawn()
        .expect("start troupe");
    let out = lines(child.stdout.take().expect("stdout"));
    // The first line of the answer is on stdout while the server still
    // holds the rest of it back.
    let mut seen = Vec::new();
    loop {
        let line = out
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no streamed line in:\n{}", seen.join("\n")));
        let first = line == "  Hello there,";
        seen.push(line);
        if first {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l == "● writer"),
        "the speaker is named before its words:\n{}",
        seen.join("\n")
    );
    assert!(
        !seen.iter().any(|l| l.contains("■") || l.contains("tokens")),
        "the turn had not ended:\n{}",
        seen.join("\n")
    );
    open.send(()).expect("open the gate");
    let end = wait(child, Duration::from_secs(30));
    assert_eq!(end.status.code(), Some(0), "{}", text(&end.stderr));
    seen.extend(out.iter());
    let all = seen.join("\n");
    assert!(
        all.contains("  Hello there,\n  streaming world.\n  · "),
        "{all}"
    );
    assert!(
        all.contains("15 tokens"),
        "the usage chunk was counted:\n{all}"
    );
    // Streamed once, and once more as the final response: not a third
    // time as the agent's message.
    assert_eq!(all.matches("streaming world.").count(), 2, "{all}");
    assert!(
        all.ends_with("── final response ──\nHello there,\nstreaming world."),
        "{all}"
    );
    assert_eq!(server.bodies.lock().unwrap()[0]["stream"], true);
}

#[test]
fn events_jsonl_carries_the_text_deltas() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Not set: the run's events are watched, so the model streams.
    let cfg = write(dir.path(), "live.yaml", &config(None));
    let server = serve(None);
    let out = wait(
        troupe(
            dir.path(),
            &[
                "run",
                "--events",
                "jsonl",
                cfg.to_str().unwrap(),
                "greet me",
            ],
        )
        .env("OPENAI_BASE_URL", &server.url)
        .spawn()
        .expect("start troupe"),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = jsonl(&out);
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .collect();
    assert_eq!(deltas.len(), PIECES.len(), "{}", text(&out.stdout));
    for (delta, piece) in deltas.iter().zip(PIECES) {
        assert_eq!(delta["path"], "live/writer");
        assert_eq!(delta["text"], piece);
        assert!(
            delta["run_id"].is_string() && delta["seq"].is_u64(),
            "{delta}"
        );
    }
    let finished = events
        .iter()
        .find(|e| e["type"] == "model_call_finished")
        .expect("a model_call_finished line");
    assert_eq!(
        finished["usage"],
        json!({"prompt_tokens": 11, "completion_tokens": 4})
    );
    assert_eq!(finished["usage_estimated"], false);
    assert_eq!(result_line(&out)["final_response"], PIECES.concat());
    assert_eq!(server.bodies.lock().unwrap()[0]["stream"], true);
}

#[test]
fn stream_false_or_nobody_watching_asks_for_whole_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let off = write(dir.path(), "off.yaml", &config(Some(false)));
    let unset = write(dir.path(), "unset.yaml", &config(None));
    let server = serve(None);
    let run = |args: &[&str]| {
        let out = wait(
            troupe(dir.path(), args)
                .env("OPENAI_BASE_URL", &server.url)
                .spawn()
                .expect("start troupe"),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out
    };
    let watched = run(&["run", "--events", "jsonl", off.to_str().unwrap(), "x"]);
    assert!(
        !jsonl(&watched).iter().any(|e| e["type"] == "text_delta"),
        "{}",
        text(&watched.stdout)
    );
    let quiet = run(&["run", "--quiet", unset.to_str().unwrap(), "x"]);
    assert_eq!(text(&quiet.stdout).trim_end(), PIECES.concat());
    let asked: Vec<bool> = server
        .bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| b.get("stream").is_some())
        .collect();
    assert_eq!(asked, [false, false]);
}

#[test]
fn chat_prints_the_streamed_answer_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "live.yaml", &config(None));
    let server = serve(None);
    let mut child = troupe(dir.path(), &["chat", cfg.to_str().unwrap()])
        .env("OPENAI_BASE_URL", &server.url)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("start troupe");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"hi\n/exit\n")
        .expect("write");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("● writer\n  Hello there,\n  streaming world.\n  · "),
        "{stdout}"
    );
    assert_eq!(stdout.matches("streaming world.").count(), 1, "{stdout}");
    assert_eq!(server.bodies.lock().unwrap()[0]["stream"], true);
}
