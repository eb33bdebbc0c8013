//! The `a2a` participant as an A2A client, through the `troupe` binary,
//! against tiny agents on 127.0.0.1 written in the test: a stream that
//! drops (twice) before the task is over is re-attached with
//! `SubscribeToTask` and the answer is whole; an agent that does not
//! stream is sent a non-blocking `SendMessage` (`returnImmediately`) and
//! asked about (`GetTask`) until its task completes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::a2a::fake_agent;
use common::{result_line, run, text, write};
use serde_json::{Value, json};

/// A card naming `base/rpc`, streaming or not.
fn card(base: &str, streaming: bool) -> String {
    json!({
        "name": "fake", "description": "A fake agent.", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
    })
    .to_string()
}

fn relay(url: &str) -> String {
    format!(
        "version: 1
name: relay
agents:
  remote:
    a2a: {{url: \"{url}\", timeout: 10s, retry: {{attempts: 2, initial: 10ms}}}}
workflow:
  steps:
    - agent: remote
"
    )
}

/// SSE frames of JSON-RPC results, each a `StreamResponse`.
fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "id": 1, "result": e})
            )
        })
        .collect()
}

fn task(state: &str) -> Value {
    json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": state}}})
}

fn piece(text: &str, append: bool) -> Value {
    json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": append,
        "artifact": {"artifactId": "answer", "parts": [{"text": text}]}}})
}

/// Runs the relay against the agent at `base`; the run's final response.
fn relay_answer(base: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "relay.yaml", &relay(base));
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", cfg.to_str().unwrap(), "hello"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    result_line(&out)["final_response"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The JSON-RPC methods a fake agent was called with, and their params.
type Calls = Arc<Mutex<Vec<(String, Value)>>>;

fn method_of(body: &str) -> (String, Value) {
    let v: Value = serde_json::from_str(body).unwrap();
    (
        v["method"].as_str().unwrap().to_string(),
        v["params"].clone(),
    )
}

#[test]
fn a_dropped_stream_is_re_subscribed_until_the_task_completes() {
    let calls: Calls = Arc::default();
    let log = calls.clone();
    let base = Arc::new(Mutex::new(String::new()));
    let at = base.clone();
    let url = fake_agent(move |verb, path, body| {
        if verb == "GET" {
            return Some((200, "application/json", card(&at.lock().unwrap(), true)));
        }
        let (method, params) = method_of(body);
        let subscribes = {
            let mut log = log.lock().unwrap();
            log.push((method.clone(), params));
            log.iter().filter(|(m, _)| m == "SubscribeToTask").count()
        };
        assert_eq!(path, "/rpc");
        // Each body has a length and the connection closes after it: the
        // first two streams end (drop) with the task still working.
        let events = match (method.as_str(), subscribes) {
            ("SendStreamingMessage", _) => vec![task("TASK_STATE_WORKING")],
            ("SubscribeToTask", 1) => vec![task("TASK_STATE_WORKING"), piece("Hello", false)],
            ("SubscribeToTask", _) => vec![
                task("TASK_STATE_WORKING"),
                piece(", world", true),
                json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
            ],
            _ => return Some((404, "text/plain", "no".into())),
        };
        Some((200, "text/event-stream", sse(&events)))
    });
    *base.lock().unwrap() = url.clone();

    assert_eq!(relay_answer(&url), "Hello, world");
    let calls = calls.lock().unwrap();
    let methods: Vec<&str> = calls.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        ["SendStreamingMessage", "SubscribeToTask", "SubscribeToTask"]
    );
    assert_eq!(calls[1].1, json!({"id": "t1"}));
}

#[test]
fn an_agent_that_does_not_stream_gets_a_non_blocking_send_and_is_asked_until_done() {
    let calls: Calls = Arc::default();
    let log = calls.clone();
    let base = Arc::new(Mutex::new(String::new()));
    let at = base.clone();
    let url = fake_agent(move |verb, _path, body| {
        if verb == "GET" {
            return Some((200, "application/json", card(&at.lock().unwrap(), false)));
        }
        let (method, params) = method_of(body);
        let asked = {
            let mut log = log.lock().unwrap();
            log.push((method.clone(), params));
            log.iter().filter(|(m, _)| m == "GetTask").count()
        };
        let result = match (method.as_str(), asked) {
            ("SendMessage", _) | ("GetTask", 1) => task("TASK_STATE_WORKING"),
            ("GetTask", _) => json!({"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{"artifactId": "answer", "parts": [{"text": "done"}]}]}),
            _ => return Some((404, "text/plain", "no".into())),
        };
        // GetTask answers a task; SendMessage a SendMessageResponse.
        let result = if method == "GetTask" && result.get("task").is_some() {
            result["task"].clone()
        } else {
            result
        };
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        Some((200, "application/json", body))
    });
    *base.lock().unwrap() = url.clone();

    assert_eq!(relay_answer(&url), "done");
    let calls = calls.lock().unwrap();
    let (method, params) = &calls[0];
    assert_eq!(method, "SendMessage");
    assert_eq!(
        params["configuration"]["returnImmediately"], true,
        "{params}"
    );
    let gets = calls.iter().filter(|(m, _)| m == "GetTask").count();
    assert_eq!(gets, 2, "{calls:?}");
}
