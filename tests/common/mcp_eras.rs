//! Helpers of the MCP era tests (tests/cli_mcp_eras.rs,
//! tests/cli_mcp_resilience.rs): the official Python SDK's servers of both
//! eras (tests/py/mcp_*_server.py), and an OpenAI-compatible model endpoint
//! on 127.0.0.1 that plays a script by the number of assistant messages it
//! is shown.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{result_line, text, troupe, wait, write};

/// The venv's python with the MCP SDK, or (skips allowed) none.
pub fn python() -> Option<PathBuf> {
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
    super::prereq::missing_venv("the MCP Python SDK `mcp`");
    None
}

pub fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A fresh `markers` folder in `dir`, where the SDK servers leave what
/// they observed.
pub fn markers_dir(dir: &Path) -> PathBuf {
    let markers = dir.join("markers");
    std::fs::create_dir_all(&markers).expect("markers dir");
    markers
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// An SDK server on a port; killed when dropped.
pub struct PyServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl PyServer {
    // The child is waited for when dropped.
    #[allow(clippy::zombie_processes)]
    pub fn start(python: &Path, file: &str, port: u16, extra: &[&str]) -> PyServer {
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

    /// The session-era SDK server (`mcp_session_server.py`) on a free
    /// port, leaving what it observed as files in `markers`.
    pub fn session(python: &Path, markers: &Path) -> PyServer {
        PyServer::start(
            python,
            "mcp_session_server.py",
            free_port(),
            &[markers.to_str().expect("utf-8")],
        )
    }

    pub fn url(&self) -> String {
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
pub type Reply = dyn Fn(&Value) -> Value + Send + Sync;

/// An OpenAI-compatible chat endpoint on 127.0.0.1; every request it was
/// sent is kept.
pub struct Model {
    /// Its base URL (`…/v1`).
    pub url: String,
    /// The requests it was sent.
    pub seen: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    pub fn start(reply: Box<Reply>) -> Model {
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
pub fn completion(message: Value, usage: (u64, u64)) -> Value {
    json!({
        "id": "c", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message,
            "finish_reason": if message["tool_calls"].is_array() { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1,
            "total_tokens": usage.0 + usage.1},
    })
}

/// An assistant message calling `calls` (name, arguments) at once.
pub fn calls(round: usize, calls: &[(&str, Value)]) -> Value {
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
pub fn rounds(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// Whether a chat request is a sampling request of the session server.
pub fn is_sampling(request: &Value) -> bool {
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
pub fn config(dir: &Path, model: &str, servers: &[String]) -> PathBuf {
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

pub fn troupe_run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = troupe(dir, args);
    cmd.env("TROUPE_TEST_KEY", "k");
    wait(cmd.spawn().expect("start troupe"), Duration::from_secs(90))
}

pub fn events_of<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["type"] == kind).collect()
}

/// The `content` of every tool result of a run, by tool name.
pub fn results(all: &[Value]) -> Vec<(String, String)> {
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

pub fn result_of(all: &[Value], tool: &str) -> String {
    results(all)
        .into_iter()
        .find(|(name, _)| name == tool)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no result of {tool} in {:?}", results(all)))
}

/// The id and prompt of the one question a waiting run's result line names.
pub fn question(out: &std::process::Output) -> (String, String) {
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
