//! OTLP as a third party reads it: the `troupe` binary exports to
//! `tests/py/otlp_receiver.py`, an OTLP/HTTP receiver on 127.0.0.1 that
//! decodes spans and metrics with the official `opentelemetry-proto`
//! package from PyPI (not the Rust crate troupe's exporter is built on).
//! A run with a tool call gives the span tree the README describes, every
//! GenAI attribute it lists, and the four metrics; a failed run's spans
//! have status ERROR.
//!
//! The receiver runs in the venv `.ci/python-venv.sh` makes
//! (`target/py-venv`, or `TROUPE_PY_VENV`); without it the tests fail,
//! saying how to make it, unless `TROUPE_ALLOW_SKIP=1`.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{lines, text, troupe, wait, write};
use serde_json::Value;

/// A lead that calls a researcher as a tool, then answers.
const TEAM: &str = r#"
version: 1
name: desk
models:
  main:
    provider: scripted
agents:
  lead:
    model: main
    instructions: Ask the researcher, then answer.
    tools:
      - agent: researcher
        description: Finds a fact.
    script:
      - tool_call: {name: researcher, arguments: {request: "one fact"}}
      - "The fact is in."
  researcher:
    model: main
    script: ["Rust is memory-safe."]
workflow:
  steps:
    - agent: lead
"#;

/// The venv's python, if it has `opentelemetry-proto`.
fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args([
            "-c",
            "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    common::prereq::missing_venv("opentelemetry-proto");
    None
}

/// The Python receiver, stopped when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(python: &Path, dir: &Path) -> Receiver {
        let out = dir.join("otlp.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/otlp_receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the receiver");
        let said = lines(child.stdout.take().unwrap());
        let first = said
            .recv_timeout(Duration::from_secs(30))
            .expect("the receiver says its port");
        let port = first
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a port: {first}"));
        Receiver { child, port, out }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What arrived, once `done` holds of it (10 s at most).
    fn arrived(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let got: Vec<Value> = std::fs::read_to_string(&self.out)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            if done(&got) || start.elapsed() > Duration::from_secs(10) {
                assert!(
                    !got.iter().any(|v| v["kind"] == "undecodable"),
                    "the receiver could not decode a request: {got:#?}"
                );
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn spans(got: &[Value]) -> Vec<&Value> {
    got.iter().filter(|v| v["kind"] == "span").collect()
}

fn span<'a>(got: &'a [Value], name: &str) -> &'a Value {
    spans(got)
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| {
            let names: Vec<&Value> = spans(got).iter().map(|s| &s["name"]).collect();
            panic!("no span '{name}' among {names:?}")
        })
}

fn has_metric(got: &[Value], name: &str) -> bool {
    got.iter()
        .any(|v| v["kind"] == "metric" && v["name"] == name)
}

const METRICS: [&str; 4] = [
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.duration",
    "troupe.turns",
    "troupe.tool_calls",
];

/// Runs `cfg` in `dir`, exporting to `r`; the exit code.
fn run_exporting(dir: &Path, cfg: &Path, r: &Receiver) -> (Option<i32>, String) {
    let mut cmd = troupe(dir, &["run", cfg.to_str().unwrap(), "go", "--quiet"]);
    cmd.args(["--otlp", &r.url()]);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(60));
    (out.status.code(), text(&out.stderr))
}

#[test]
fn a_python_otlp_receiver_decodes_the_span_tree_attributes_and_metrics() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(&python, dir.path());
    let cfg = write(dir.path(), "desk.yaml", TEAM);
    let (code, err) = run_exporting(dir.path(), &cfg, &r);
    assert_eq!(code, Some(0), "{err}");
    let got = r.arrived(|g| {
        g.iter().any(|v| v["name"] == "invoke_workflow desk")
            && METRICS.iter().all(|m| has_metric(g, m))
    });

    // The tree: run → turn → model calls and the tool call → the agent
    // the tool runs; one trace, the run its root.
    let run = span(&got, "invoke_workflow desk");
    assert_eq!(run["parent_span_id"], "", "the run is the root");
    assert_eq!(run["service"], "troupe");
    let trace = &run["trace_id"];
    assert!(
        spans(&got).iter().all(|s| &s["trace_id"] == trace),
        "one trace"
    );
    let lead = span(&got, "invoke_agent lead");
    let under = |child: &Value, parent: &Value| -> bool {
        child["parent_span_id"] == parent["span_id"]
            || spans(&got).iter().any(|s| {
                s["span_id"] == child["parent_span_id"]
                    && s["name"] == "superstep"
                    && s["parent_span_id"] == parent["span_id"]
            })
    };
    assert!(under(lead, run), "the turn is in the run");
    let chats: Vec<&Value> = spans(&got)
        .into_iter()
        .filter(|s| s["name"] == "chat main:lead")
        .collect();
    assert_eq!(chats.len(), 2, "the lead's two model calls");
    let tool = span(&got, "execute_tool researcher");
    assert_eq!(tool["parent_span_id"], lead["span_id"]);
    let researcher = span(&got, "invoke_agent researcher");
    assert_eq!(researcher["parent_span_id"], tool["span_id"]);
    assert!(
        spans(&got).iter().all(|s| s["status"]["code"] != 2),
        "nothing failed"
    );

    // Every GenAI attribute the README lists, where it belongs.
    assert_eq!(
        run["attributes"]["gen_ai.operation.name"],
        "invoke_workflow"
    );
    assert_eq!(lead["attributes"]["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(lead["attributes"]["gen_ai.agent.name"], "lead");
    for chat in &chats {
        assert_eq!(chat["parent_span_id"], lead["span_id"]);
        let a = &chat["attributes"];
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "troupe.scripted");
        assert_eq!(a["gen_ai.request.model"], "main:lead");
        assert_eq!(a["gen_ai.response.model"], "main:lead");
        // Integers, as the conventions have them.
        assert!(
            a["gen_ai.usage.input_tokens"]
                .as_i64()
                .is_some_and(|n| n > 0),
            "{a}"
        );
        assert!(
            a["gen_ai.usage.output_tokens"]
                .as_i64()
                .is_some_and(|n| n > 0),
            "{a}"
        );
    }
    let a = &tool["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["gen_ai.tool.name"], "researcher");
    assert!(
        a["gen_ai.tool.call.id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{a}"
    );

    // The metrics, with the attributes the README names.
    let points = |name: &str| -> Vec<&Value> {
        got.iter()
            .filter(|v| v["kind"] == "metric" && v["name"] == name)
            .collect()
    };
    let tokens = points("gen_ai.client.token.usage");
    for kind in ["input", "output"] {
        assert!(
            tokens
                .iter()
                .any(|p| p["attributes"]["gen_ai.token.type"] == kind
                    && p["attributes"]["gen_ai.request.model"] == "main:lead"
                    && p["attributes"]["gen_ai.operation.name"] == "chat"
                    && p["sum"].as_f64().is_some_and(|s| s > 0.0)),
            "{kind} tokens: {tokens:#?}"
        );
    }
    let durations = points("gen_ai.client.operation.duration");
    assert!(
        durations
            .iter()
            .any(|p| p["attributes"]["gen_ai.request.model"] == "main:lead"
                && p["count"].as_u64().is_some_and(|n| n >= 2)),
        "{durations:#?}"
    );
    let turns: i64 = points("troupe.turns")
        .iter()
        .filter_map(|p| p["value"].as_i64())
        .sum();
    // The run's one turn: the lead's (the researcher's runs inside its
    // tool call).
    assert_eq!(turns, 1, "{:#?}", points("troupe.turns"));
    let calls = points("troupe.tool_calls");
    assert!(
        calls
            .iter()
            .any(|p| p["attributes"]["gen_ai.tool.name"] == "researcher"
                && p["value"].as_i64() == Some(1)),
        "{calls:#?}"
    );
}

#[test]
fn a_failed_runs_spans_reach_the_python_receiver_with_status_error() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(&python, dir.path());
    // The lead's second model call finds its script empty: the run fails.
    let cfg = write(
        dir.path(),
        "desk.yaml",
        &TEAM.replace(r#"      - "The fact is in.""#, ""),
    );
    let (code, err) = run_exporting(dir.path(), &cfg, &r);
    assert_eq!(code, Some(1), "{err}");
    let got = r.arrived(|g| g.iter().any(|v| v["name"] == "invoke_workflow desk"));
    let run = span(&got, "invoke_workflow desk");
    assert_eq!(run["status"]["code"], 2, "{run}");
    assert!(
        run["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lead")),
        "{run}"
    );
    assert_eq!(run["attributes"]["troupe.status"], "failed");
    let lead = span(&got, "invoke_agent lead");
    assert_eq!(lead["status"]["code"], 2, "{lead}");
    assert_eq!(lead["attributes"]["error.type"], "model");
    let failed = spans(&got)
        .into_iter()
        .find(|s| s["name"] == "chat main:lead" && s["status"]["code"] == 2)
        .expect("the failed model call");
    assert_eq!(failed["attributes"]["error.type"], "script_exhausted");
    // The call that worked, and the tool call, have no error.
    assert!(
        spans(&got)
            .iter()
            .any(|s| s["name"] == "chat main:lead" && s["status"]["code"] == 0)
    );
    assert_eq!(span(&got, "execute_tool researcher")["status"]["code"], 0);
    // The failed call's duration is counted with its error type.
    let got = r.arrived(|g| has_metric(g, "gen_ai.client.operation.duration"));
    assert!(
        got.iter()
            .any(|v| v["name"] == "gen_ai.client.operation.duration"
                && v["attributes"]["error.type"].is_string()),
        "no failed call's duration: {got:#?}"
    );
}
