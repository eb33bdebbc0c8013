//! `/mcp` on `troupe serve` at the wire, without an SDK: a stateless
//! (2026-07-28) call streams its progress as SSE, and a call whose client
//! goes away (the connection closed, no `notifications/cancelled`) cancels
//! its run, which the store then lists `cancelled` before its last step.
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
    assert!(
        run["run_id"]
            .as_str()
            .unwrap()
            .starts_with("mcp-release-notes-"),
        "{run}"
    );
    // Its last step (three of a second each) never ran.
    std::thread::sleep(Duration::from_millis(2500));
    let runs = listed(dir.path(), "durable.yaml");
    assert_eq!(runs[0]["status"], "cancelled", "{runs:?}");
    assert!(
        runs[0]["stats"]["total"]["turns"].as_u64().unwrap() < 3,
        "{runs:?}"
    );
}
