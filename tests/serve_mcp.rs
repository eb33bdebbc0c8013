//! `/mcp` on `troupe serve` at the wire, without an SDK: a stateless
//! (2026-07-28) call streams its progress as SSE, and a call whose client
//! goes away (the connection closed, no `notifications/cancelled`) cancels
//! its run, which the store then lists `cancelled` before its last step;
//! a call's run is listed in `GET /runs`, waiting then completed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use common::listed;
use common::serve::{Server, client};

#[test]
fn a_stateless_call_whose_client_goes_away_cancels_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    std::fs::copy(
        examples.join("durable.yaml"),
        dir.path().join("durable.yaml"),
    )
    .unwrap();
    let server = Server::start(dir.path(), &["durable.yaml"], &[]);
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"release-notes","arguments":{"message":"Write the notes"},"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}}}"#;
    let mut response = client()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "release-notes")
        .body(body)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // Read until the first agent's turn has started, then hang up.
    let mut seen = String::new();
    let mut buf = [0u8; 512];
    while !seen.contains("release-notes/collector") {
        let n = response.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("notifications/progress"), "{seen}");
    drop(response);
    let deadline = Instant::now() + Duration::from_secs(15);
    let run = loop {
        let runs = listed(dir.path(), "durable.yaml");
        if let Some(r) = runs.first().filter(|r| r["status"] == "cancelled") {
            break r.clone();
        }
        assert!(Instant::now() < deadline, "never cancelled: {runs:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(run["run_id"].as_str().unwrap().starts_with("run-"), "{run}");
    // Its last step (three of a second each) never ran.
    std::thread::sleep(Duration::from_millis(2500));
    let runs = listed(dir.path(), "durable.yaml");
    assert_eq!(runs[0]["status"], "cancelled", "{runs:?}");
    assert!(
        runs[0]["stats"]["total"]["turns"].as_u64().unwrap() < 3,
        "{runs:?}"
    );
}

/// A stateless `tools/call` of `tool` with `extra` params; the response's
/// text (JSON or SSE).
fn call(server: &Server, tool: &str, extra: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}{extra},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}},"io.modelcontextprotocol/clientInfo":{{"name":"test","version":"1"}}}}}}}}"#
    );
    client()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body)
        .send()
        .unwrap()
        .text()
        .unwrap()
}

#[test]
fn a_call_s_run_is_listed_in_get_runs_waiting_then_completed() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp/conformance");
    let name = "test_input_required_result_elicitation.yaml";
    std::fs::copy(fixtures.join(name), dir.path().join(name)).unwrap();
    let server = Server::start(dir.path(), &[name], &[]);
    let tool = "test_input_required_result_elicitation";
    let asked = call(&server, tool, "");
    let state = asked
        .split(r#""requestState":""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no requestState: {asked}"));
    assert!(asked.contains(r#""user_name""#), "{asked}");
    let runs = |server: &Server| -> Vec<serde_json::Value> {
        let v: serde_json::Value = client()
            .get(server.url("/runs"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        v.as_array().cloned().unwrap_or_else(|| panic!("{v}"))
    };
    let listed = runs(&server);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["team"], tool, "{listed:?}");
    assert_eq!(listed[0]["status"], "waiting_for_input", "{listed:?}");
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let answered = call(
        &server,
        tool,
        &format!(
            r#","inputResponses":{{"user_name":{{"action":"accept","content":{{"name":"Alice"}}}}}},"requestState":"{state}""#
        ),
    );
    assert!(answered.contains("Hello, state-ok!"), "{answered}");
    let listed = runs(&server);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], id.as_str(), "{listed:?}");
    assert_eq!(listed[0]["status"], "completed", "{listed:?}");
    let detail: serde_json::Value = client()
        .get(server.url(&format!("/runs/{id}")))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(detail["response"], "Hello, state-ok!", "{detail}");
}
