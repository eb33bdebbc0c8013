//! The cassette acceptance test through the `troupe` binary: a team with a
//! nested team, a tool and a real MCP server process (`troupe mcp-demo`)
//! recorded against an OpenAI-format server on 127.0.0.1 that streams;
//! every process stopped, `--replay` gives the same thread and the same
//! events (ids and times aside) with no network (the model URL is a closed
//! port) and no child process (the MCP server's command is a script that
//! would leave a marker); one agent's instructions changed, the replay
//! fails naming that agent's path and the call with a diff of the request,
//! and `--replay-mode lenient` replays it anyway.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::sse_model::SseModel;
use common::{jsonl, produced, text, troupe, wait, write};
use serde_json::Value;

use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "ord-tok-5c1a9e77d3";

fn team(checker_instructions: &str) -> String {
    format!(
        "version: 1
name: desk
models:
  m: {{provider: openai, model: fake-model, base_url: \"${{TEST_BASE_URL}}\", api_key_env: TEST_API_KEY, retries: 1}}
agents:
  searcher:
    model: m
    instructions: Look the order up.
    tools:
      - mcp:
          name: orders
          command: ${{MCP_COMMAND}}
          args: [mcp-demo]
          tools: [lookup_order]
          env: {{ORDERS_TOKEN: \"${{ORDERS_TOKEN}}\"}}
  checker: {{model: m, instructions: {checker_instructions}, tools: [calculator]}}
  writer: {{model: m, instructions: Write the reply.}}
workflows:
  research:
    steps: [{{agent: searcher}}, {{agent: checker}}]
workflow:
  steps:
    - workflow: research
    - agent: writer
"
    )
}

/// `troupe args` in `dir` with the model at `url` and the MCP server's
/// command `mcp`.
fn troupe_run(dir: &Path, url: &str, mcp: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = troupe(dir, args);
    cmd.env("TEST_BASE_URL", url)
        .env("TEST_API_KEY", "sk-test-key-never-recorded")
        .env("ORDERS_TOKEN", TOKEN)
        .env("MCP_COMMAND", mcp);
    wait(cmd.spawn().expect("start troupe"), Duration::from_secs(60))
}

/// The events with what differs between two runs of the same thing taken
/// out: ids (and references to them), times, durations.
fn comparable(events: &[Value]) -> Vec<Value> {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| {
                        let k = k.as_str();
                        !(k == "id"
                            || k.ends_with("_id")
                            || k.ends_with("_ms")
                            || k.ends_with("_at")
                            || k == "ts"
                            || k == "time"
                            || k == "timestamp"
                            || k == "checkpoint"
                            || k == "seq")
                    })
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            // A message id where a field refers to one.
            Value::String(s) if s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Value::from("<id>")
            }
            other => other.clone(),
        }
    }
    events.iter().map(strip).collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            e["event"]
                .as_str()
                .or(e["type"].as_str())
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

#[test]
fn a_nested_team_with_a_tool_and_an_mcp_server_replays_offline_with_the_same_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "desk.yaml", &team("Check the sums."));
    let cfg = cfg.to_str().unwrap();
    let task = "Where is order A-1001?";
    let mut model = SseModel::start();
    let url = model.url.clone();
    let recorded = troupe_run(
        dir.path(),
        &url,
        common::TROUPE,
        &["run", "--events", "jsonl", "--record", "cas", cfg, task],
    );
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    let thread = produced(&recorded);
    assert_eq!(thread.len(), 4, "{thread:?}");

    // Keyed by the full path; the MCP server's list kept, its secret not.
    let cas = dir.path().join("cas");
    let calls = std::fs::read_to_string(cas.join("model_calls.jsonl")).unwrap();
    let keys: Vec<(String, u64)> = calls
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
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
            ("desk/research/searcher".to_string(), 0),
            ("desk/research/searcher".to_string(), 1),
            ("desk/research/checker".to_string(), 0),
            ("desk/research/checker".to_string(), 1),
            ("desk/writer".to_string(), 0),
        ]
    );
    assert!(
        calls.contains("\"chunks\""),
        "streamed answers kept as pieces"
    );
    let servers = std::fs::read_to_string(cas.join("mcp_servers.jsonl")).unwrap();
    let server: Value = serde_json::from_str(servers.trim()).unwrap();
    assert_eq!(
        (&server["agent"], &server["server"]),
        (&"searcher".into(), &"orders".into())
    );
    assert_eq!(server["tools"][0]["name"], "lookup_order", "{server}");
    assert_eq!(
        server["transport"]["env"]["ORDERS_TOKEN"], "[REDACTED]",
        "{server}"
    );
    let tools = std::fs::read_to_string(cas.join("tool_calls.jsonl")).unwrap();
    assert!(tools.contains("\"server\":\"orders\""), "{tools}");
    assert!(
        tools.contains("\"agent\":\"desk/research/checker\""),
        "{tools}"
    );
    for file in ["model_calls.jsonl", "tool_calls.jsonl", "mcp_servers.jsonl"] {
        let body = std::fs::read_to_string(cas.join(file)).unwrap();
        assert!(
            !body.contains(TOKEN) && !body.contains("sk-test-key"),
            "{file}: {body}"
        );
    }

    // Everything stopped: the model's port closed, the troupe run (and
    // its MCP server) ended. A spawned MCP server would leave a marker.
    model.stop();
    let marker = dir.path().join("spawned");
    let fake = write(
        dir.path(),
        "fake-mcp.sh",
        &format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
    );
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .unwrap();
    let fake = fake.to_str().unwrap();
    let replayed = troupe_run(
        dir.path(),
        &url,
        fake,
        &["run", "--events", "jsonl", "--replay", "cas", cfg, task],
    );
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        text(&replayed.stderr)
    );
    assert!(!marker.exists(), "the MCP server was started on replay");
    assert_eq!(produced(&replayed), thread);
    let (a, b) = (comparable(&jsonl(&recorded)), comparable(&jsonl(&replayed)));
    // The same events: the same ones in all, and each agent path's in the
    // same order. (Across paths the interleaving is not the run's to keep:
    // a turn's `agent_started` comes from the run's supervisor and its model
    // events from the turn's task, in either order, recorded or not.)
    let sorted = |events: &[Value]| {
        let mut all: Vec<String> = events.iter().map(Value::to_string).collect();
        all.sort();
        all
    };
    assert_eq!(sorted(&a), sorted(&b));
    for path in a.iter().filter_map(|e| e["path"].as_str()) {
        let of = |events: &[Value]| -> Vec<Value> {
            events
                .iter()
                .filter(|e| e["path"] == path && e["type"] != "agent_started")
                .cloned()
                .collect()
        };
        assert_eq!(of(&a), of(&b), "the events of `{path}`");
    }
    assert!(
        kinds(&b).iter().any(|k| k == "text_delta"),
        "{:?}",
        kinds(&b)
    );

    // The nested checker's instructions changed: its call is named, with
    // a diff of the request.
    let changed = write(dir.path(), "changed.yaml", &team("Check every sum twice."));
    let changed = changed.to_str().unwrap();
    let out = troupe_run(
        dir.path(),
        &url,
        fake,
        &["run", "-q", "--replay", "cas", changed, task],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("agent `desk/research/checker` call 0"),
        "{err}"
    );
    assert!(
        err.contains("- ") && err.contains("Check the sums."),
        "{err}"
    );
    assert!(
        err.contains("+ ") && err.contains("Check every sum twice."),
        "{err}"
    );
    assert!(!marker.exists());

    // Lenient: matched by content, the nearest recorded call answers.
    let out = troupe_run(
        dir.path(),
        &url,
        fake,
        &[
            "run",
            "--events",
            "jsonl",
            "--replay",
            "cas",
            "--replay-mode",
            "lenient",
            changed,
            task,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(produced(&out), thread);
    assert!(!marker.exists());

    // An MCP server the cassette does not hold is refused as the team is
    // built, naming it and what the cassette holds; still nothing started.
    let other = team("Check the sums.").replace("name: orders", "name: stock");
    let other = write(dir.path(), "other.yaml", &other);
    let out = troupe_run(
        dir.path(),
        &url,
        fake,
        &[
            "run",
            "-q",
            "--replay",
            "cas",
            other.to_str().unwrap(),
            task,
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("MCP server `stock` is not in the cassette"),
        "{err}"
    );
    assert!(err.contains("searcher/orders"), "{err}");
    assert!(!marker.exists());
}
