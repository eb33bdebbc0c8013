//! Helpers of the AG-UI tests (tests/serve_agui*.rs): requests, their
//! SSE events, and the checks of a stream by `ag-ui-validate` and the
//! official AG-UI Python SDK's event models (tests/py/agui_events.py), both
//! in the venv `.ci/python-venv.sh` makes (`target/py-venv`, or
//! `TROUPE_PY_VENV`).
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::serve::{Server, client};
use crate::common::text;

pub const TOKEN: &str = "agui-token";

/// The venv with `ag-ui-validate` and `ag-ui-protocol`, if made.
pub fn venv() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    venv.join("bin/ag-ui-validate").exists().then_some(venv)
}

/// Checks a recorded stream with `ag-ui-validate` (0 errors, 0
/// warnings; the shared-state feature declared, but for a refusal, which
/// starts no run) and each event with the SDK's models.
pub fn validate(venv: &Path, dir: &Path, name: &str, sse: &str) {
    let features = if sse.contains("RUN_ERROR") {
        "agentic-chat"
    } else {
        "shared-state"
    };
    let file = dir.join(format!("{name}.sse"));
    std::fs::write(&file, sse).unwrap();
    let out = Command::new(venv.join("bin/ag-ui-validate"))
        .arg(&file)
        .args(["--json", "--max-warnings", "0"])
        .args(["--features", features])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ag-ui-validate said no JSON ({e}): {}{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    assert_eq!(
        (
            &report["summary"]["errors"],
            &report["summary"]["warnings"],
            out.status.code()
        ),
        (&json!(0), &json!(0), Some(0)),
        "ag-ui-validate on {name}: {:#}\n{sse}",
        report["diagnostics"]
    );
    assert!(report["eventCount"].as_u64().unwrap() >= 2, "{report}");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/agui_events.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ag-ui-protocol's models refuse events of {name}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Has `ag-ui-validate` post its own `RunAgentInput` to `url` and check the
/// live stream, the transport too (Content-Type, incremental flushing,
/// keep-alive, a terminal event): 0 errors, 0 warnings, no rule skipped.
pub fn validate_live(venv: &Path, url: &str) {
    let out = Command::new(venv.join("bin/ag-ui-validate"))
        .arg(url)
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args([
            "--json",
            "--max-warnings",
            "0",
            "--features",
            "shared-state",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ag-ui-validate said no JSON ({e}): {}{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    assert_eq!(
        (
            &report["summary"]["errors"],
            &report["summary"]["warnings"],
            &report["skipped"],
            out.status.code()
        ),
        (&json!(0), &json!(0), &json!([]), Some(0)),
        "ag-ui-validate {url}: {report:#}"
    );
}

/// A `RunAgentInput` on `thread` with one user message.
pub fn input(thread: &str, run: &str, message: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {"ui": "kept"},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": message}],
        "tools": [], "context": [], "forwardedProps": {},
    })
}

/// A `RunAgentInput` answering `interrupt` with `answer`.
pub fn resume(thread: &str, run: &str, parent: &str, interrupt: &str, answer: Value) -> Value {
    json!({
        "threadId": thread, "runId": run, "parentRunId": parent,
        "messages": [], "tools": [], "context": [], "forwardedProps": {},
        "resume": [{"interruptId": interrupt, "status": "resolved", "payload": answer}],
    })
}

/// Posts `body` to `/agui/{team}`; the SSE body.
pub fn post(s: &Server, team: &str, body: &Value) -> String {
    let r = client()
        .post(s.url(&format!("/agui/{team}")))
        .bearer_auth(TOKEN)
        .json(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    r.text().unwrap()
}

/// The events of an SSE body.
pub fn events(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The events of type `kind`.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Where the `kind` event of step `step` is; panics if nowhere.
pub fn position(events: &[Value], kind: &str, step: &str) -> usize {
    events
        .iter()
        .position(|e| e["type"] == kind && e["stepName"] == step)
        .unwrap_or_else(|| panic!("no {kind} {step}"))
}

/// The text of all `TEXT_MESSAGE_CONTENT`s.
pub fn said(events: &[Value]) -> String {
    of_type(events, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// A server over copies of the examples `names`.
pub fn serve_examples(names: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    for n in names {
        std::fs::copy(examples.join(n), dir.path().join(n)).unwrap();
    }
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", TOKEN)]);
    (dir, s)
}

/// The interrupts a stream ended with.
pub fn interrupts(ev: &[Value]) -> Vec<Value> {
    let last = ev.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
    last["outcome"]["interrupts"].as_array().unwrap().clone()
}
