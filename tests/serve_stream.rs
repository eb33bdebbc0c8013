//! `/v1/chat/completions` with `stream: true` streams the answering
//! agent's tokens as its model writes them: a 3-agent team whose
//! answering agent (`answer: writer`, not the last to speak) talks to a
//! model server on 127.0.0.1 speaking the OpenAI SSE wire format, which
//! sends its first tokens and then holds the stream open until the test
//! lets it go on. The client sees the first content delta while the run is
//! still under way; the joined deltas equal the final answer. Checked with
//! a plain HTTP client and with the official `openai` Python package
//! (tests/py/openai_stream.py; skipped, saying so, without the venv
//! `.ci/python-venv.sh` makes, except in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::serve::{Server, client, json_of};
use common::{text, write};
use serde_json::{Value, json};

/// The writer's answer, in the pieces its model sends; the model holds
/// the stream open after the first.
const PIECES: [&str; 3] = ["Actors keep ", "their own inboxes, ", "and share nothing."];

/// A model server streaming [`PIECES`] to each request, waiting for the
/// gate after the first; its base URL.
fn model(gate: mpsc::Receiver<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
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
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            );
            let chunk = |delta: Value, finish: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                )
            };
            let _ = stream.write_all(chunk(json!({"role": "assistant"}), Value::Null).as_bytes());
            let _ = stream.write_all(chunk(json!({"content": PIECES[0]}), Value::Null).as_bytes());
            let _ = stream.flush();
            // Held open: the rest comes when the test says so.
            let _ = gate.recv_timeout(Duration::from_secs(30));
            for p in &PIECES[1..] {
                let _ = stream.write_all(chunk(json!({"content": p}), Value::Null).as_bytes());
            }
            let _ = stream.write_all(chunk(json!({}), json!("stop")).as_bytes());
            let usage = json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                               "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}});
            let _ = write!(stream, "data: {usage}\n\ndata: [DONE]\n\n");
        }
    });
    url
}

/// A researcher (scripted), the writer (the live model) and a critic
/// (scripted, last to speak); the writer answers for the team.
fn team(url: &str) -> String {
    format!(
        "version: 1
name: trio
models:
  live: {{provider: openai, base_url: \"{url}\", model: fake-model, retries: 1}}
  s: {{provider: scripted, when_exhausted: cycle}}
agents:
  researcher: {{model: s, script: [\"notes: actors share nothing\"]}}
  writer: {{model: live, instructions: Write it up.}}
  critic: {{model: s, script: [\"APPROVE\"]}}
workflow:
  sequential:
    participants: [researcher, writer, critic]
  answer: writer
"
    )
}

/// The `data:` payloads of an SSE body, one at a time, as they come.
struct Chunks<R: BufRead>(R);

impl<R: BufRead> Iterator for Chunks<R> {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        loop {
            let mut line = String::new();
            if self.0.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(data) = line.trim_end().strip_prefix("data: ") {
                return Some(data.to_string());
            }
        }
    }
}

fn run_status(s: &Server, id: &str) -> Value {
    json_of(client().get(s.url(&format!("/runs/{id}"))).send().unwrap())
}

#[test]
fn the_first_token_arrives_while_the_team_still_runs() {
    let (gate, held) = mpsc::channel();
    let url = model(held);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "trio.yaml", &team(&url));
    let s = Server::start(dir.path(), &["trio.yaml"], &[]);
    let r = client()
        .post(s.url("/v1/chat/completions"))
        .json(
            &json!({"model": "trio", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "actors, in one line"}]}),
        )
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let run = r.headers()["x-troupe-run"].to_str().unwrap().to_string();
    let mut chunks = Chunks(BufReader::new(r));
    let mut content = String::new();
    let mut usage = Value::Null;
    let mut released = false;
    let mut done = false;
    for data in chunks.by_ref() {
        if data == "[DONE]" {
            done = true;
            break;
        }
        let c: Value = serde_json::from_str(&data).unwrap();
        assert!(c.get("error").is_none(), "{c}");
        if !c["usage"].is_null() {
            usage = c["usage"].clone();
        }
        let Some(piece) = c["choices"][0]["delta"]["content"].as_str() else {
            continue;
        };
        if piece.is_empty() {
            continue;
        }
        if !released {
            // The model holds its stream open: the run cannot have ended.
            assert_eq!(piece, PIECES[0]);
            assert_eq!(run_status(&s, &run)["status"], "running");
            gate.send(()).unwrap();
            released = true;
        }
        content.push_str(piece);
    }
    assert!(done, "no [DONE]");
    let run = run_status(&s, &run);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(content, PIECES.concat());
    assert_eq!(run["response"], content, "the joined deltas are the answer");
    assert!(usage["total_tokens"].as_u64().unwrap() > 0, "{usage}");
}

#[test]
fn progress_shows_the_other_agents_as_reasoning_and_a_whole_answer_names_the_writer() {
    let (gate, held) = mpsc::channel();
    let url = model(held);
    for _ in 0..2 {
        gate.send(()).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "trio.yaml", &team(&url));
    let s = Server::start(dir.path(), &["trio.yaml"], &[]);
    let r = client()
        .post(s.url("/v1/chat/completions"))
        .json(&json!({"stream": true, "troupe_progress": true,
                      "messages": [{"role": "user", "content": "actors"}]}))
        .send()
        .unwrap();
    let (mut content, mut reasoning) = (String::new(), String::new());
    for data in Chunks(BufReader::new(r)) {
        if data == "[DONE]" {
            break;
        }
        let c: Value = serde_json::from_str(&data).unwrap();
        let delta = &c["choices"][0]["delta"];
        content.push_str(delta["content"].as_str().unwrap_or(""));
        reasoning.push_str(delta["reasoning_content"].as_str().unwrap_or(""));
    }
    assert_eq!(content, PIECES.concat());
    assert!(
        reasoning.contains("[trio/researcher] notes: actors share nothing"),
        "{reasoning}"
    );
    assert!(reasoning.contains("[trio/critic] APPROVE"), "{reasoning}");
    assert!(!reasoning.contains(PIECES[0]), "{reasoning}");

    let whole = json_of(
        client()
            .post(s.url("/v1/chat/completions"))
            .json(&json!({"messages": [{"role": "user", "content": "again"}]}))
            .send()
            .unwrap(),
    );
    assert_eq!(
        whole["choices"][0]["message"]["content"],
        PIECES.concat(),
        "{whole}"
    );
}

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    python.exists().then_some(python)
}

#[test]
fn the_openai_python_sdk_gets_the_first_token_before_the_run_ends() {
    let Some(python) = python() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "CI: no Python venv with the openai package (target/py-venv); .ci/run makes it with .ci/python-venv.sh"
        );
        eprintln!(
            "skipped: no Python venv with the openai package (run .ci/python-venv.sh to make target/py-venv)"
        );
        return;
    };
    let (gate, held) = mpsc::channel();
    let url = model(held);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "trio.yaml", &team(&url));
    let s = Server::start(dir.path(), &["trio.yaml"], &[("TROUPE_SERVE_TOKEN", "t0k")]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/openai_stream.py");
    let mut py = Command::new(python)
        .arg(script)
        .args([s.base.as_str(), "t0k"])
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(py.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    // `first RUN_ID "PIECE"`: the SDK has the first content delta.
    let mut words = line.trim_end().splitn(3, ' ');
    assert_eq!(words.next(), Some("first"), "python said: {line:?}");
    let run = words.next().unwrap().to_string();
    let piece: Value = serde_json::from_str(words.next().unwrap()).unwrap();
    assert_eq!(piece, PIECES[0]);
    let status = json_of(
        client()
            .get(s.url(&format!("/runs/{run}")))
            .bearer_auth("t0k")
            .send()
            .unwrap(),
    );
    assert_eq!(status["status"], "running", "{status}");
    gate.send(()).unwrap();
    writeln!(py.stdin.take().unwrap(), "go").unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let done = py.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "stdout:\n{rest}\nstderr:\n{}",
        text(&done.stderr)
    );
    let joined: Value = serde_json::from_str(rest.trim()).unwrap();
    let status = json_of(
        client()
            .get(s.url(&format!("/runs/{run}")))
            .bearer_auth("t0k")
            .send()
            .unwrap(),
    );
    assert_eq!(joined["content"], PIECES.concat());
    assert_eq!(joined["content"], status["response"], "{status}");
    assert!(joined["usage"].as_u64().unwrap() > 0, "{joined}");
}

/// The README's serve demo, as pasted: `troupe serve
/// examples/configs/round_robin.yaml`, offline.
#[test]
fn the_readme_demo_answers_with_the_poem_message_after_message() {
    const POEM: &str = "Each actor keeps an inbox, reads one letter at a time;\nno locks, no shared pen: just messages in line.";
    const DRAFT: &str =
        "Actors send letters, never share a pen;\nthey wait in their inboxes, and answer again.";
    let config =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/configs/round_robin.yaml");
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[config.to_str().unwrap()], &[]);
    let ask = |body: Value| {
        let r = client()
            .post(s.url("/v1/chat/completions"))
            .header("X-Troupe-Session", "alice")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        r
    };
    let poem = json!({"model": "poem-desk", "messages": [{"role": "user", "content": "a two-line poem about actors"}]});
    for _ in 0..3 {
        let whole = json_of(ask(poem.clone()));
        assert_eq!(whole["choices"][0]["message"]["content"], POEM, "{whole}");
    }
    // Streamed, the writer's words come as it writes them: its draft, then
    // (after a blank line) the rewrite the critic approved.
    let r =
        ask(json!({"messages": [{"role": "user", "content": "shorter, please"}], "stream": true}));
    let run = r.headers()["x-troupe-run"].to_str().unwrap().to_string();
    let mut content = String::new();
    for data in Chunks(BufReader::new(r)) {
        if data == "[DONE]" {
            break;
        }
        let c: Value = serde_json::from_str(&data).unwrap();
        content.push_str(c["choices"][0]["delta"]["content"].as_str().unwrap_or(""));
    }
    assert_eq!(content, format!("{DRAFT}\n\n{POEM}"));
    assert_eq!(run_status(&s, &run)["response"], POEM);
}
