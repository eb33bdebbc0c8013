//! `troupe serve` under test: started on a free port of 127.0.0.1, its
//! address read from its first line, killed when dropped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use reqwest::blocking::{Client, Response};
use serde_json::Value;

/// A running server.
pub struct Server {
    /// The child process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its stderr lines after the first.
    pub stderr: mpsc::Receiver<String>,
}

impl Server {
    /// Starts `troupe serve ARGS --listen 127.0.0.1:0` in `dir` with
    /// `envs` set, and waits until it listens.
    // The child is waited for when the server is dropped.
    #[allow(clippy::zombie_processes)]
    pub fn start(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        // Every `provider: auto` model runs scripted, whatever the environment.
        let mut all = vec!["serve", "--offline"];
        all.extend_from_slice(args);
        if !args.contains(&"--listen") {
            all.extend_from_slice(&["--listen", "127.0.0.1:0"]);
        }
        let mut cmd = super::troupe(dir, &all);
        cmd.env_remove("TROUPE_SERVE_TOKEN");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start troupe serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => {
                    if let Some(at) = line.find("http://") {
                        let base = line[at..].split_whitespace().next().expect("address");
                        return Server {
                            child,
                            base: base.to_string(),
                            stderr: rx,
                        };
                    }
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "troupe serve never said where it listens:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two scripted agents in sequence; the editor's reply is the answer.
pub const DESK: &str = "version: 1
name: desk
description: A writer and an editor.
models:
  m: {provider: auto, model: gpt-test, api_key_env: NEVER_SHOWN_KEY, headers: {X-Team-Secret: shh-header-value}}
agents:
  writer:
    description: Drafts.
    model: m
    tools: [calculator]
    script:
      - tool_call: {name: calculator, arguments: {expression: \"6 * 7\"}}
      - \"draft one\"
      - \"draft two\"
      - \"draft three\"
  editor:
    model: m
    script: [\"final one\", \"final two\", \"final three\"]
workflow:
  steps:
    - agent: writer
    - agent: editor
";

/// A clerk that asks the user a question before answering.
pub const ASKING: &str = "version: 1
name: asking
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which order?\"}}
      - \"Refunded the order you named.\"
workflow:
  steps:
    - agent: clerk
";

/// Every turn takes 5 s: a run to cancel.
pub const SLOW: &str = "version: 1
name: slow
models:
  m: {provider: scripted, delay: 5s, when_exhausted: repeat_last}
agents:
  sloth:
    model: m
    script: [\"at last\"]
workflow:
  steps:
    - agent: sloth
";

pub fn client() -> Client {
    // reqwest is built without a bundled crypto provider (plain HTTP here).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

pub fn json_of(r: Response) -> Value {
    let status = r.status();
    let body = r.text().unwrap();
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"))
}

/// Polls `GET /runs/{id}` until its status is not `running`.
pub fn settled(s: &Server, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = json_of(client().get(s.url(&format!("/runs/{id}"))).send().unwrap());
        if run["status"] != "running" {
            return run;
        }
        assert!(Instant::now() < deadline, "run never settled: {run}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One SSE frame: its fields by name (data lines joined).
#[derive(Debug, Default)]
pub struct Frame {
    /// `id:`.
    pub id: Option<String>,
    /// `event:`.
    pub event: Option<String>,
    /// The `data:` lines, joined.
    pub data: String,
}

/// Every frame of an SSE response, to its end.
pub fn frames(r: Response) -> Vec<Frame> {
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut out = Vec::new();
    let mut cur = Frame::default();
    for line in BufReader::new(r).lines() {
        let line = line.unwrap();
        if line.is_empty() {
            if cur.id.is_some() || cur.event.is_some() || !cur.data.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("data: ") {
            if !cur.data.is_empty() {
                cur.data.push('\n');
            }
            cur.data.push_str(v);
        } else if let Some(v) = line.strip_prefix("id: ") {
            cur.id = Some(v.into());
        } else if let Some(v) = line.strip_prefix("event: ") {
            cur.event = Some(v.into());
        }
    }
    out
}
