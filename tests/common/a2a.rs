//! Helpers of the A2A tests: `troupe serve` with the teams they use,
//! JSON-RPC calls over HTTP, and tiny fake A2A agents on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::{ASKING, Server, client, json_of};
use super::write;

pub const TOKEN: &str = "spec-token";

/// Every turn takes 2 s: a task seen working.
pub const SLOWISH: &str = "version: 1
name: slowish
models:
  m: {provider: scripted, delay: 2s, when_exhausted: repeat_last}
agents:
  sloth:
    model: m
    script: [\"at last\"]
workflow:
  steps:
    - agent: sloth
";

/// A clerk that asks a question, each turn taking 1 s: every state of a
/// task (working, input required, working, completed) lasts long enough
/// to be seen.
pub const ASKING_SLOWLY: &str = "version: 1
name: asking-slowly
models:
  m: {provider: scripted, delay: 1s}
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

/// A clerk whose answer is JSON: an artifact with a data part.
pub const LEDGER: &str = "version: 1
name: ledger
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    script: [\"{\\\"ok\\\": true, \\\"order\\\": 42}\"]
workflow:
  steps:
    - agent: clerk
";

pub fn server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", ASKING);
    write(dir.path(), "slowish.yaml", SLOWISH);
    write(dir.path(), "asking-slowly.yaml", ASKING_SLOWLY);
    write(dir.path(), "ledger.yaml", LEDGER);
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", TOKEN)]);
    (dir, s)
}

/// POSTs `body` (raw) to `/a2a/{team}` with the A2A headers.
pub fn post_raw(s: &Server, team: &str, body: &str, version: &str) -> reqwest::blocking::Response {
    client()
        .post(s.url(&format!("/a2a/{team}")))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/a2a+json")
        .header("A2A-Version", version)
        .body(body.to_string())
        .send()
        .unwrap()
}

/// Calls `method` with `params`; the whole JSON-RPC response.
pub fn call(s: &Server, team: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    json_of(post_raw(s, team, &body.to_string(), "1.0"))
}

/// The error code of a call, which must have failed.
pub fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

pub fn message(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

pub fn send(s: &Server, team: &str, params: Value) -> Value {
    let r = call(s, team, "SendMessage", params);
    r["result"]["task"].clone()
}

/// Polls `GetTask` until the task is in `state`.
pub fn until_state(s: &Server, team: &str, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = call(s, team, "GetTask", json!({"id": id}))["result"].clone();
        if task["status"]["state"] == state {
            return task;
        }
        assert!(Instant::now() < deadline, "never {state}: {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a fake agent answers: status, content type, body.
pub type Answer = (u16, &'static str, String);

/// Serves `answer(method, path, body)` on a free port of 127.0.0.1 until
/// the test ends; its base URL. `None` from `answer` leaves the request
/// unanswered (the connection held open).
pub fn fake_agent(answer: impl Fn(&str, &str, &str) -> Option<Answer> + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut parts = first.split_whitespace();
            let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            match answer(method, path, &String::from_utf8_lossy(&body)) {
                Some((status, kind, body)) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                None => held.push(stream),
            }
        }
    });
    base
}
