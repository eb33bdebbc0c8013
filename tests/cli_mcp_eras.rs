//! MCP servers of both eras, as a user meets them through `troupe run`:
//! one agent uses a 2025-11-25 session server and a 2026-07-28 stateless
//! server at once (both written with the official Python SDK, `mcp`),
//! and what they ask of it works — elicitation becomes a question the run
//! waits on and `--answer` answers (form and URL modes, and the stateless
//! era's `input_required` rounds), sampling is answered by the agent's own
//! model and counted in the run's usage, progress arrives as
//! `tool_progress` events, a cancelled run cancels the call on the server,
//! and an HTTP server that restarts is reached again.
//!
//! The agent's model is an OpenAI-compatible endpoint on 127.0.0.1 (the
//! real wire format) that plays a script by the number of assistant
//! messages it is shown, and answers sampling requests apart.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{jsonl, result_line, text, troupe, wait, write};
use serde_json::{Value, json};

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import mcp.server.mcpserver, uvicorn"])
            .output()
            .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    common::prereq::missing_venv("the MCP Python SDK `mcp`");
    None
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// An SDK server on a port; killed when dropped.
struct PyServer {
    child: Child,
    port: u16,
}

impl PyServer {
    // The child is waited for when dropped.
    #[allow(clippy::zombie_processes)]
    fn start(python: &Path, file: &str, port: u16, extra: &[&str]) -> PyServer {
        let child = Command::new(python)
            .arg(script(file))
            .arg(port.to_string())
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the MCP server");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{file} did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        PyServer { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the model endpoint answers a chat request with.
type Reply = dyn Fn(&Value) -> Value + Send + Sync;

/// An OpenAI-compatible chat endpoint on 127.0.0.1; every request it was
/// sent is kept.
struct Model {
    url: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    fn start(reply: Box<Reply>) -> Model {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
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
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = reply(&request).to_string();
                kept.lock().expect("lock").push(request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        Model { url, seen }
    }
}

/// A chat completion of `message`, using `usage` tokens in and out.
fn completion(message: Value, usage: (u64, u64)) -> Value {
    json!({
        "id": "c", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message,
            "finish_reason": if message["tool_calls"].is_array() { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1,
            "total_tokens": usage.0 + usage.1},
    })
}

/// An assistant message calling `calls` (name, arguments) at once.
fn calls(round: usize, calls: &[(&str, Value)]) -> Value {
    let list: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id": format!("call_{round}_{i}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": list})
}

/// How many assistant messages a chat request shows: the agent's rounds
/// so far.
fn rounds(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// Whether a chat request is a sampling request of the session server.
fn is_sampling(request: &Value) -> bool {
    request["messages"].as_array().is_some_and(|m| {
        m.iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Summarize:"))
        })
    })
}

/// A config of agent `a` on model endpoint `model` with the MCP servers
/// `servers` (YAML flow mappings).
fn config(dir: &Path, model: &str, servers: &[String]) -> PathBuf {
    let tools: String = servers
        .iter()
        .map(|s| format!("      - mcp: {s}\n"))
        .collect();
    write(
        dir,
        "eras.yaml",
        &format!(
            "version: 1\nmodels:\n  m:\n    provider: openai\n    model: fake\n    base_url: \"{model}\"\n    api_key_env: TROUPE_TEST_KEY\nagents:\n  a:\n    model: m\n    tools:\n{tools}workflow:\n  sequential:\n    participants: [a]\ncheckpoint: {{store: sqlite, path: state/runs.db}}\n"
        ),
    )
}

fn troupe_run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = troupe(dir, args);
    cmd.env("TROUPE_TEST_KEY", "k");
    wait(cmd.spawn().expect("start troupe"), Duration::from_secs(90))
}

fn events_of<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["type"] == kind).collect()
}

/// The `content` of every tool result of a run, by tool name.
fn results(all: &[Value]) -> Vec<(String, String)> {
    events_of(all, "tool_result")
        .into_iter()
        .map(|e| {
            (
                e["result"]["name"].as_str().unwrap_or_default().to_string(),
                e["result"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

fn result_of(all: &[Value], tool: &str) -> String {
    results(all)
        .into_iter()
        .find(|(name, _)| name == tool)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no result of {tool} in {:?}", results(all)))
}

/// The id and prompt of the one question a waiting run's result line names.
fn question(out: &std::process::Output) -> (String, String) {
    let result = result_line(out);
    assert_eq!(
        result["status"],
        "waiting_for_input",
        "{result}\n{}",
        text(&out.stderr)
    );
    let q = &result["requests"][0];
    (
        q["id"].as_str().expect("an id").to_string(),
        q["prompt"].as_str().expect("a prompt").to_string(),
    )
}

#[test]
fn one_agent_uses_a_stateless_and_a_session_server_with_elicitation_sampling_and_progress() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = dir.path().join("markers");
    std::fs::create_dir_all(&markers).expect("markers dir");
    let session = PyServer::start(
        &python,
        "mcp_session_server.py",
        free_port(),
        &[markers.to_str().expect("utf-8")],
    );
    let stateless = PyServer::start(&python, "mcp_stateless_server.py", free_port(), &[]);
    let model = Model::start(Box::new(|request| {
        if is_sampling(request) {
            return completion(
                json!({"role": "assistant", "content": "a short summary"}),
                (100, 50),
            );
        }
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_era", json!({})), ("w_era", json!({}))]),
            1 => calls(round, &[("s_crunch", json!({"steps": 3}))]),
            2 => calls(round, &[("s_summarize", json!({"text": "a long text"}))]),
            3 => calls(round, &[("s_greet", json!({}))]),
            4 => calls(round, &[("s_sign_in", json!({}))]),
            5 => calls(round, &[("w_forecast", json!({}))]),
            _ => json!({"role": "assistant", "content": "all done"}),
        };
        completion(message, (1, 1))
    }));
    let cfg = config(
        dir.path(),
        &model.url,
        &[
            format!(
                "{{name: session, url: \"{}\", prefix: s, sampling: true}}",
                session.url()
            ),
            format!(
                "{{name: stateless, url: \"{}\", prefix: w}}",
                stateless.url()
            ),
        ],
    );
    let cfg = cfg.to_str().expect("utf-8");

    // First run: both eras at once, progress, sampling; then the session
    // server's form elicitation leaves the run waiting.
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "r",
            cfg,
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(result_of(&all, "s_era"), "session server speaks 2025-11-25");
    assert_eq!(
        result_of(&all, "w_era"),
        "stateless server speaks 2026-07-28"
    );
    let progress = events_of(&all, "tool_progress");
    assert_eq!(progress.len(), 3, "{progress:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["name"], "s_crunch", "{p}");
        assert_eq!(p["call_id"], "call_1_0", "{p}");
        assert_eq!(p["progress"].as_f64(), Some((i + 1) as f64), "{p}");
        assert_eq!(p["total"].as_f64(), Some(3.0), "{p}");
        assert_eq!(p["message"], format!("step {} of 3", i + 1), "{p}");
    }
    assert_eq!(result_of(&all, "s_crunch"), "crunched 3");
    assert_eq!(result_of(&all, "s_summarize"), "summary: a short summary");
    // Sampling was the agent's model's: counted as a model call, its
    // tokens in the run's usage.
    let finished = events_of(&all, "run_finished");
    let total = &finished[0]["stats"]["total"];
    assert_eq!(total["model_calls"], 5, "{total}");
    assert_eq!(total["input_tokens"], 104, "{total}");
    assert_eq!(total["output_tokens"], 54, "{total}");
    let sampled: Vec<Value> = model
        .seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|r| is_sampling(r))
        .cloned()
        .collect();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0]["max_tokens"], 50, "{}", sampled[0]);
    let (id, prompt) = question(&out);
    assert!(prompt.contains("Who should I greet?"), "{prompt}");
    assert!(
        prompt.contains("name (string, required)") && prompt.contains("age (integer, required)"),
        "{prompt}"
    );

    // The answer, in a new process: the call runs again and the server's
    // elicitation is answered with it; then the URL elicitation asks.
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=name=Ada, age=36"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(
        result_of(&all, "s_greet"),
        "hello Ada, 36 [protocol 2025-11-25]"
    );
    let (id, prompt) = question(&out);
    assert!(
        prompt.contains("https://example.test/sign-in") && prompt.contains("Sign in to continue"),
        "{prompt}"
    );

    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=done"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(result_of(&all, "s_sign_in"), "sign-in: accept");
    // The stateless server's `input_required` round becomes a question too.
    let (id, prompt) = question(&out);
    assert!(prompt.contains("Which city?"), "{prompt}");

    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=Paris"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(
        result_of(&all, "w_forecast"),
        "sunny in Paris [protocol 2026-07-28, state asked-city]"
    );
    let result = result_line(&out);
    assert_eq!(result["status"], "completed", "{result}");
}

#[test]
fn a_cancelled_run_cancels_the_call_on_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = dir.path().join("markers");
    std::fs::create_dir_all(&markers).expect("markers dir");
    let session = PyServer::start(
        &python,
        "mcp_session_server.py",
        free_port(),
        &[markers.to_str().expect("utf-8")],
    );
    let model = Model::start(Box::new(|request| {
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_wait", json!({}))]),
            _ => json!({"role": "assistant", "content": "over"}),
        };
        completion(message, (1, 1))
    }));
    let cfg = config(
        dir.path(),
        &model.url,
        &[format!(
            "{{name: session, url: \"{}\", prefix: s}}",
            session.url()
        )],
    );
    let mut cmd = troupe(
        dir.path(),
        &["run", "--grace", "0", cfg.to_str().expect("utf-8"), "go"],
    );
    cmd.env("TROUPE_TEST_KEY", "k");
    let child = cmd.spawn().expect("start troupe");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !markers.join("waiting").exists() {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!markers.join("cancelled").exists());
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = wait(child, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !markers.join("cancelled").exists() {
        assert!(
            Instant::now() < deadline,
            "the server saw no cancellation; troupe said: {}",
            text(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_http_server_that_restarts_is_reached_again() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = dir.path().join("markers");
    std::fs::create_dir_all(&markers).expect("markers dir");
    let port = free_port();
    let marker_arg = markers.to_str().expect("utf-8").to_string();
    let server = Arc::new(Mutex::new(Some(PyServer::start(
        &python,
        "mcp_session_server.py",
        port,
        &[&marker_arg],
    ))));
    let restarts = server.clone();
    let python2 = python.clone();
    let model = Model::start(Box::new(move |request| {
        let round = rounds(request);
        if round == 1 {
            // The server goes away between the agent's two calls, and
            // comes back on the same port a little later.
            let mut slot = restarts.lock().expect("lock");
            if slot.is_some() {
                drop(slot.take());
                let (later, python, marker) =
                    (restarts.clone(), python2.clone(), marker_arg.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(700));
                    let fresh = PyServer::start(&python, "mcp_session_server.py", port, &[&marker]);
                    *later.lock().expect("lock") = Some(fresh);
                });
            }
        }
        let message = match round {
            0 | 1 => calls(round, &[("s_era", json!({}))]),
            _ => json!({"role": "assistant", "content": "over"}),
        };
        completion(message, (1, 1))
    }));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let cfg = config(
        dir.path(),
        &model.url,
        &[format!("{{name: session, url: \"{url}\", prefix: s}}")],
    );
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            cfg.to_str().expect("utf-8"),
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = jsonl(&out);
    let era: Vec<String> = results(&all)
        .into_iter()
        .filter(|(n, _)| n == "s_era")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(
        era,
        [
            "session server speaks 2025-11-25",
            "session server speaks 2025-11-25"
        ],
        "{}",
        text(&out.stderr)
    );
    drop(server);
}

#[test]
fn an_elicitation_is_answered_over_serve() {
    use common::serve::{Server, client, frames, json_of, settled};
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = dir.path().join("markers");
    std::fs::create_dir_all(&markers).expect("markers dir");
    let session = PyServer::start(
        &python,
        "mcp_session_server.py",
        free_port(),
        &[markers.to_str().expect("utf-8")],
    );
    let model = Model::start(Box::new(|request| {
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_greet", json!({}))]),
            _ => json!({"role": "assistant", "content": "greeted"}),
        };
        completion(message, (1, 1))
    }));
    config(
        dir.path(),
        &model.url,
        &[format!(
            "{{name: session, url: \"{}\", prefix: s}}",
            session.url()
        )],
    );
    let s = Server::start(dir.path(), &["eras.yaml"], &[("TROUPE_TEST_KEY", "k")]);
    let c = client();
    let started = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "greet"}))
            .send()
            .expect("POST /runs"),
    );
    let id = started["id"].as_str().expect("a run id").to_string();
    let run = settled(&s, &id);
    assert_eq!(run["status"], "waiting_for_input", "{run}");
    let q = &run["requests"][0];
    assert!(
        q["question"]
            .as_str()
            .is_some_and(|t| t.contains("Who should I greet?")),
        "{q}"
    );
    let answered = c
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"request_id": q["id"], "answer": "{\"name\": \"Bo\", \"age\": 7}"}))
        .send()
        .expect("POST input");
    assert_eq!(answered.status(), 202);
    let run = settled(&s, &id);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["response"], "greeted");
    let events: Vec<Value> = frames(
        c.get(s.url(&format!("/runs/{id}/events")))
            .send()
            .expect("events"),
    )
    .iter()
    .filter(|f| f.event.is_none())
    .map(|f| serde_json::from_str(&f.data).expect("an event"))
    .collect();
    assert_eq!(
        result_of(&events, "s_greet"),
        "hello Bo, 7 [protocol 2025-11-25]"
    );
}
