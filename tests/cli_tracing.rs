//! Logs and spans of the `troupe` binary: `--log-level` and `RUST_LOG` on
//! stderr only, and spans exported over OTLP/HTTP (`--otlp URL` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) to a receiver on 127.0.0.1 that decodes
//! them, with the tree a run makes (run, steps, turns, model and tool calls).

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::{text, troupe, wait, write};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message as _;

/// A team whose run has a tool call (an agent as a tool) and a nested
/// workflow as one of its steps.
const TEAM: &str = r#"
version: 1
name: desk
models:
  main:
    provider: scripted
    model: desk-model
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
  writer:
    model: main
    script: ["Written up."]
workflows:
  drafting:
    description: Writes it up.
    sequential:
      participants: [writer]
workflow:
  steps:
    - agent: lead
    - workflow: drafting
"#;

/// One span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    attrs: HashMap<String, String>,
    /// The span's status: its code (2 is ERROR) and description.
    status: (i32, String),
}

type Spans = Arc<Mutex<Vec<Got>>>;

async fn receive(State(spans): State<Spans>, body: Bytes) -> &'static str {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace request");
    let mut got = spans.lock().unwrap();
    for rs in request.resource_spans {
        for ss in rs.scope_spans {
            for s in ss.spans {
                let attrs = s
                    .attributes
                    .iter()
                    .map(|kv| {
                        let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                            Some(Value::StringValue(s)) => s.clone(),
                            Some(Value::IntValue(i)) => i.to_string(),
                            Some(Value::BoolValue(b)) => b.to_string(),
                            Some(Value::DoubleValue(d)) => d.to_string(),
                            other => format!("{other:?}"),
                        };
                        (kv.key.clone(), v)
                    })
                    .collect();
                got.push(Got {
                    name: s.name,
                    trace: s.trace_id,
                    id: s.span_id,
                    parent: s.parent_span_id,
                    attrs,
                    status: s.status.map(|st| (st.code, st.message)).unwrap_or_default(),
                });
            }
        }
    }
    ""
}

/// An OTLP/HTTP receiver on 127.0.0.1: its address, the spans it got, and
/// the runtime serving it (dropped with the test).
fn receiver() -> (SocketAddr, Spans, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let spans: Spans = Arc::default();
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(spans.clone());
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await });
    (addr, spans, rt)
}

/// Runs the team with `configure` applied to the command; its stdout.
fn run_team(dir: &Path, configure: impl FnOnce(&mut std::process::Command)) -> String {
    let cfg = write(dir, "desk.yaml", TEAM);
    let mut cmd = troupe(dir, &["run", cfg.to_str().unwrap(), "go", "--quiet"]);
    configure(&mut cmd);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn named<'a>(spans: &'a [Got], name: &str) -> &'a Got {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span '{name}' among {:#?}", names(spans)))
}

fn names(spans: &[Got]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// The spans of the team's run: one trace, each span under the right
/// parent, with the GenAI attributes (and message contents if
/// `contents`).
fn check_tree(spans: &[Got], contents: bool) {
    let run = named(spans, "invoke_workflow desk");
    assert!(run.parent.is_empty(), "the run is the root");
    assert_eq!(run.attrs["gen_ai.operation.name"], "invoke_workflow");
    assert_eq!(run.attrs["troupe.status"], "completed");
    assert!(spans.iter().all(|s| s.trace == run.trace), "one trace");

    let lead = named(spans, "invoke_agent lead");
    assert!(in_run(spans, lead, run), "a step's turn is in the run");
    assert_eq!(lead.attrs["gen_ai.agent.name"], "lead");

    let chats: Vec<&Got> = spans
        .iter()
        .filter(|s| s.name == "chat main:lead" && s.parent == lead.id)
        .collect();
    assert_eq!(
        chats.len(),
        2,
        "the lead's two model calls: {:#?}",
        names(spans)
    );
    for chat in &chats {
        assert_eq!(chat.attrs["gen_ai.operation.name"], "chat");
        assert_eq!(chat.attrs["gen_ai.provider.name"], "troupe.scripted");
        assert_eq!(chat.attrs["gen_ai.request.model"], "main:lead");
        // The model the response names (the scripted model names itself),
        // though the console's events make the call a streamed one.
        assert_eq!(chat.attrs["gen_ai.response.model"], "main:lead");
        assert_eq!(chat.status.0, 0, "a call that worked has no status");
        assert!(chat.attrs.contains_key("gen_ai.usage.input_tokens"));
        assert!(chat.attrs.contains_key("gen_ai.usage.output_tokens"));
        // No contents without TROUPE_CAPTURE_CONTENT.
        assert_eq!(chat.attrs.contains_key("gen_ai.input.messages"), contents);
        assert_eq!(chat.attrs.contains_key("gen_ai.output.messages"), contents);
    }

    let tool = named(spans, "execute_tool researcher");
    assert_eq!(tool.parent, lead.id);
    assert_eq!(tool.attrs["gen_ai.tool.name"], "researcher");
    assert!(!tool.attrs["gen_ai.tool.call.id"].is_empty());
    let researcher = named(spans, "invoke_agent researcher");
    assert_eq!(
        researcher.parent, tool.id,
        "the agent as a tool runs in the call"
    );

    let step = named(spans, "invoke_agent drafting");
    assert!(in_run(spans, step, run));
    let inner = named(spans, "invoke_workflow drafting");
    assert_eq!(inner.parent, step.id, "the nested run is its step's turn");
    let writer = named(spans, "invoke_agent writer");
    assert!(
        in_run(spans, writer, inner),
        "the writer's turn is in the nested run"
    );
}

/// Whether `turn` is a turn of `run`: its child, or a child of one of its
/// supersteps.
fn in_run(spans: &[Got], turn: &Got, run: &Got) -> bool {
    turn.parent == run.id
        || spans
            .iter()
            .any(|s| s.id == turn.parent && s.name == "superstep" && s.parent == run.id)
}

/// Waits up to 5 s for the receiver to hold the run's span.
fn arrived(spans: &Spans) -> Vec<Got> {
    for _ in 0..100 {
        let got = spans.lock().unwrap().clone();
        if got.iter().any(|s| s.name == "invoke_workflow desk") {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no run span arrived: {:#?}", spans.lock().unwrap());
}

#[test]
fn otlp_flag_exports_the_span_tree_of_a_run() {
    let (addr, spans, _rt) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let out = run_team(dir.path(), |cmd| {
        cmd.args(["--otlp", &format!("http://{addr}")]);
    });
    assert_eq!(out.trim(), "Written up.", "stdout carries the answer only");
    check_tree(&arrived(&spans), false);
}

#[test]
fn the_otlp_endpoint_variable_exports_too_with_contents_when_asked() {
    let (addr, spans, _rt) = receiver();
    let dir = tempfile::tempdir().unwrap();
    run_team(dir.path(), |cmd| {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}"))
            .env("TROUPE_CAPTURE_CONTENT", "1");
    });
    let got = arrived(&spans);
    check_tree(&got, true);
    let tool = named(&got, "execute_tool researcher");
    assert!(tool.attrs["gen_ai.tool.call.arguments"].contains("one fact"));
    assert_eq!(
        tool.attrs["gen_ai.tool.call.result"],
        "Rust is memory-safe."
    );
    let chat = got
        .iter()
        .find(|s| s.name == "chat main:lead")
        .expect("a model call");
    assert!(chat.attrs["gen_ai.input.messages"].contains("Ask the researcher"));
}

#[test]
fn logs_go_to_stderr_by_the_log_level_flag_or_rust_log() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "desk.yaml", TEAM);
    let cfg = cfg.to_str().unwrap();
    for (flag, env) in [(Some("debug"), None), (None, Some("troupe=debug"))] {
        let mut cmd = troupe(dir.path(), &["run", cfg, "go", "--quiet"]);
        if let Some(level) = flag {
            cmd.args(["--log-level", level]);
        }
        if let Some(filter) = env {
            cmd.env("RUST_LOG", filter);
        }
        let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim(), "Written up.");
        assert!(
            text(&out.stderr).contains("run finished"),
            "debug logs on stderr: {}",
            text(&out.stderr)
        );
    }
    // The default (warn) says nothing on a clean run.
    let out = wait(
        troupe(dir.path(), &["run", cfg, "go", "--quiet"])
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    assert!(!text(&out.stderr).contains("run finished"));
    // A filter that is not one is refused, naming it.
    let out = wait(
        troupe(dir.path(), &["--log-level", "troupe=[", "run", cfg, "go"])
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("invalid log filter 'troupe=['"));
}

#[test]
fn the_spans_of_a_failed_run_are_flushed_with_its_error() {
    let (addr, spans, _rt) = receiver();
    let dir = tempfile::tempdir().unwrap();
    // The second model call finds the script empty: the run fails.
    let cfg = write(
        dir.path(),
        "desk.yaml",
        &TEAM.replace(r#"      - "The fact is in.""#, ""),
    );
    let mut cmd = troupe(dir.path(), &["run", cfg.to_str().unwrap(), "go"]);
    cmd.args(["--otlp", &format!("http://{addr}")]);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let got = arrived(&spans);
    let run = named(&got, "invoke_workflow desk");
    assert_eq!(run.attrs["troupe.status"], "failed");
    assert_eq!(run.attrs["error.type"], "model");
    // Status ERROR (2), described by the error's message, on the run,
    // the turn and the call that failed.
    assert_eq!(run.status.0, 2, "{:?}", run.status);
    assert!(run.status.1.contains("lead"), "{:?}", run.status);
    let lead = named(&got, "invoke_agent lead");
    assert_eq!(lead.status.0, 2, "{:?}", lead.status);
    assert!(!lead.status.1.is_empty());
    assert_eq!(
        named(&got, "invoke_agent lead").attrs["error.type"],
        "model"
    );
    let failed = got
        .iter()
        .find(|s| s.name == "chat main:lead" && s.attrs.contains_key("error.type"))
        .expect("the failed model call");
    assert_eq!(failed.attrs["error.type"], "script_exhausted");
    assert_eq!(failed.status.0, 2, "{:?}", failed.status);
    assert!(
        failed.status.1.contains("script"),
        "the call's error described: {:?}",
        failed.status
    );
    // The other call worked: no status.
    let ok = got
        .iter()
        .find(|s| s.name == "chat main:lead" && !s.attrs.contains_key("error.type"))
        .expect("the call that worked");
    assert_eq!(ok.status.0, 0);
}

#[test]
fn otlp_pointed_at_nothing_warns_on_stderr_and_the_run_still_answers() {
    // A port where nothing listens: bound, then let go.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "desk.yaml", TEAM);
    for flag in [true, false] {
        let mut cmd = troupe(dir.path(), &["run", cfg.to_str().unwrap(), "go", "--quiet"]);
        if flag {
            cmd.args(["--otlp", &format!("http://{addr}")]);
        } else {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}"));
        }
        let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim(), "Written up.");
        let err = text(&out.stderr);
        assert!(
            err.contains("warning: no OTLP collector answers at")
                && err.contains(&addr.to_string()),
            "a warning naming the endpoint: {err}"
        );
    }
    // A collector that is there: no warning.
    let (addr, _spans, _rt) = receiver();
    let mut cmd = troupe(dir.path(), &["run", cfg.to_str().unwrap(), "go", "--quiet"]);
    cmd.args(["--otlp", &format!("http://{addr}")]);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
    assert!(out.status.success());
    assert!(
        !text(&out.stderr).contains("OTLP collector"),
        "{}",
        text(&out.stderr)
    );
}

/// A graph with one agent placed on node `b`.
const PLACED: &str = "version: 1
name: paper
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [draft]}
  researcher: {model: m, node: b, script: [notes]}
workflow:
  graph:
    nodes: [writer, researcher]
    transitions:
      - {from: writer, to: researcher}
";

/// A `troupe node` process, killed and reaped when dropped.
struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts node `b` of `cfg` exporting its spans to `collector` (in
/// batches every 50 ms: it is killed, not stopped); its node and address.
fn start_node(dir: &Path, cfg: &str, collector: SocketAddr) -> (Node, String) {
    use std::io::{BufRead, BufReader};
    let mut cmd = troupe(
        dir,
        &[
            "node",
            "--config",
            cfg,
            "--name",
            "b",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    cmd.env("TROUPE_COOKIE", "sesame")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{collector}"))
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let node = Node(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(15))
            .expect("the node's ready line");
        if let Some(rest) = line.strip_prefix("node b listening on ") {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            return (node, addr);
        }
    }
}

#[test]
fn a_turn_on_another_node_is_in_the_callers_trace() {
    let (collector, spans, _rt) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "paper.yaml", PLACED);
    let cfg = cfg.to_str().unwrap();
    let (_node, addr) = start_node(dir.path(), cfg, collector);
    let mut run = troupe(
        dir.path(),
        &["run", cfg, "a paper", "--quiet", "--connect", &addr],
    );
    run.env("TROUPE_COOKIE", "sesame")
        .args(["--otlp", &format!("http://{collector}")]);
    let out = wait(run.spawn().unwrap(), Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "notes");

    // The node's spans come in its next batch.
    let mut got = Vec::new();
    for _ in 0..100 {
        got = spans.lock().unwrap().clone();
        let remote = got.iter().any(|s| {
            s.name == "invoke_agent researcher"
                && s.attrs
                    .get("troupe.path")
                    .is_some_and(|p| p.ends_with("@b"))
        });
        if remote && got.iter().any(|s| s.name == "invoke_workflow paper") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = named(&got, "invoke_workflow paper");
    let turns: Vec<&Got> = got
        .iter()
        .filter(|s| s.name == "invoke_agent researcher")
        .collect();
    let remote = turns
        .iter()
        .find(|s| s.attrs["troupe.path"].ends_with("@b"))
        .unwrap_or_else(|| panic!("no span from node b: {:#?}", names(&got)));
    let local = turns
        .iter()
        .find(|s| !s.attrs["troupe.path"].ends_with("@b"))
        .expect("the caller's turn span");
    assert_eq!(remote.trace, run.trace, "one trace across the nodes");
    assert_eq!(
        remote.parent, local.id,
        "the remote turn is in the caller's"
    );
    assert!(
        got.iter()
            .any(|s| s.name.starts_with("chat ") && s.parent == remote.id),
        "the model call on node b is in its turn"
    );
}

#[test]
fn the_spans_of_a_run_waiting_for_input_are_flushed_as_it_exits() {
    let (addr, spans, _rt) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs/human_in_the_loop.yaml");
    let cfg = dir.path().join("human_in_the_loop.yaml");
    std::fs::copy(&example, &cfg).unwrap();
    let mut cmd = troupe(
        dir.path(),
        &[
            "run",
            "--no-input",
            cfg.to_str().unwrap(),
            "I was charged twice",
        ],
    );
    cmd.args(["--otlp", &format!("http://{addr}")]);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // Exported before the exit: nothing is waited for here.
    let got = spans.lock().unwrap().clone();
    let run = got
        .iter()
        .find(|s| s.name.starts_with("invoke_workflow ") && s.parent.is_empty())
        .unwrap_or_else(|| panic!("no run span: {:#?}", names(&got)));
    assert!(
        run.attrs["troupe.status"].contains("waiting"),
        "{:?}",
        run.attrs
    );
}
