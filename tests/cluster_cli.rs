//! The cluster from the command line: `troupe node` processes hosting the
//! agents a YAML config places on them, and `troupe run --connect …`
//! running the workflow over them. Every process is the built `troupe`
//! binary, on 127.0.0.1 with ports the system picks (`--listen
//! 127.0.0.1:0`; the ready line says which), killed and reaped by a guard
//! whatever happens, and every wait is bounded.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::wait;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");
const COOKIE: &str = "TROUPE_COOKIE";

/// A `troupe` command with the cookie (or none) and no model endpoint.
fn troupe(args: &[&str], cookie: Option<&str>) -> Command {
    let mut cmd = Command::new(TROUPE);
    cmd.args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove(COOKIE)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = cookie {
        cmd.env(COOKIE, c);
    }
    cmd
}

/// A `troupe node` process, killed and reaped when dropped.
struct NodeProc {
    name: String,
    child: Child,
    lines: Receiver<String>,
    /// Where it listens.
    addr: String,
    /// The rest of its ready line: `(hosting: …; peers: …)`.
    ready: String,
}

impl NodeProc {
    /// Starts `troupe node` for `config` as `name` and waits for its ready
    /// line.
    fn start(config: &Path, name: &str) -> NodeProc {
        let config = config.to_string_lossy();
        let mut child = troupe(
            &[
                "node",
                "--config",
                &config,
                "--name",
                name,
                "--listen",
                "127.0.0.1:0",
            ],
            Some("sesame"),
        )
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start troupe node");
        let (tx, rx) = channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut node = NodeProc {
            name: name.to_string(),
            child,
            lines: rx,
            addr: String::new(),
            ready: String::new(),
        };
        let line = node.ready(Duration::from_secs(15));
        let (addr, rest) = line.split_once(' ').unwrap_or((&line, ""));
        (node.addr, node.ready) = (addr.to_string(), rest.to_string());
        node
    }

    /// What follows `node NAME listening on ` on its ready line.
    fn ready(&mut self, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let prefix = format!("node {} listening on ", self.name);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(&prefix) {
                        return rest.to_string();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("node {}: no ready line within {timeout:?}", self.name)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("node {}: exited before its ready line", self.name)
                }
            }
        }
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to its end, killing it after `limit`.
fn finish(mut cmd: Command, limit: Duration) -> Output {
    wait(cmd.spawn().expect("start troupe"), limit)
}

/// `troupe run CONFIG TASK --connect <each node> EXTRA...` with the right
/// cookie, which must succeed.
fn run_on(config: &Path, task: &str, nodes: &[&NodeProc], extra: &[&str]) -> Output {
    let file = config.to_string_lossy();
    let mut args = vec!["run", &file, task];
    for node in nodes {
        args.extend(["--connect", node.addr.as_str()]);
    }
    args.extend(extra);
    let out = finish(troupe(&args, Some("sesame")), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write the config");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JSON lines of `--events jsonl` output.
fn events(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The node each produced message says it came from, by source.
fn produced_on(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "message_produced")
        .filter_map(|e| {
            let m = &e["message"];
            let node = m["metadata"]["troupe.node"].as_str()?;
            Some((m["source"].as_str()?.to_string(), node.to_string()))
        })
        .collect()
}

const SPREAD: &str = r#"version: 1
name: survey
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  mapper: {model: m, script: ['["Rust", "Go", "Zig", "C"]']}
  worker: {model: m, instructions: Describe the language in one line., script: ["one-line summary"]}
  reducer: {model: m, script: ["combined"]}
workflow:
  map_reduce: {mapper: mapper, worker: worker, reducer: reducer, placement: spread}
"#;

#[test]
fn a_spread_map_reduce_runs_its_workers_on_both_nodes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(dir.path(), "survey.yaml", SPREAD);
    let b = NodeProc::start(&config, "b");
    let c = NodeProc::start(&config, "c");
    // Each node hosts the spread worker, and only it.
    for n in [&b, &c] {
        assert!(n.ready.starts_with("(hosting: worker;"), "{}", n.ready);
    }
    let out = run_on(
        &config,
        "compare four languages",
        &[&b, &c],
        &["--events", "jsonl"],
    );
    let events = events(&out);
    let result = events.last().cloned().unwrap_or_default();
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["final_response"], "combined", "{result}");
    // Four sub-tasks, round robin over the two nodes: two on each.
    let workers = produced_on(&events);
    assert_eq!(workers.len(), 4, "{workers:?}");
    assert!(
        workers
            .iter()
            .all(|(source, _)| source.starts_with("worker#")),
        "{workers:?}"
    );
    let on = |n: &str| workers.iter().filter(|(_, node)| node == n).count();
    assert_eq!((on("b"), on("c")), (2, 2), "{workers:?}");
}

#[test]
fn a_graph_sends_turns_to_the_nodes_its_agents_are_placed_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(
        dir.path(),
        "paper.yaml",
        "version: 1
name: paper
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [draft]}
  researcher: {model: m, node: b, script: [notes]}
  editor: {model: m, script: [final]}
workflow:
  graph:
    nodes: [writer, researcher, editor@c]
    transitions:
      - {from: writer, to: researcher}
      - {from: researcher, to: editor}
",
    );
    let b = NodeProc::start(&config, "b");
    let c = NodeProc::start(&config, "c");
    assert!(b.ready.starts_with("(hosting: researcher;"), "{}", b.ready);
    assert!(c.ready.starts_with("(hosting: editor;"), "{}", c.ready);
    let out = run_on(&config, "a paper", &[&b, &c], &["--events", "jsonl"]);
    let events = events(&out);
    let result = events.last().cloned().unwrap_or_default();
    assert_eq!(result["final_response"], "final", "{result}");
    // The writer ran here (no node), the others where they were placed.
    assert_eq!(
        produced_on(&events),
        [
            ("researcher".to_string(), "b".to_string()),
            ("editor".to_string(), "c".to_string())
        ]
    );
}

#[test]
fn the_cluster_example_config_runs_as_its_readme_says() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cluster/review.yaml");
    let b = NodeProc::start(&config, "b");
    let c = NodeProc::start(&config, "c");
    let out = run_on(&config, "review the book", &[&b, &c], &["--offline"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .trim_end()
            .ends_with("Six chapters reviewed: clear and well paced throughout."),
        "{stdout}"
    );
    // The console says where each of the six chapters was reviewed.
    assert_eq!(stdout.matches(" · on node b").count(), 3, "{stdout}");
    assert_eq!(stdout.matches(" · on node c").count(), 3, "{stdout}");
}

#[test]
fn missing_cookie_or_cluster_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(dir.path(), "survey.yaml", SPREAD);
    let file = config.to_string_lossy();

    // No cookie: a node refuses to start.
    let node = finish(
        troupe(
            &[
                "node",
                "--config",
                &file,
                "--name",
                "b",
                "--listen",
                "127.0.0.1:0",
            ],
            None,
        ),
        Duration::from_secs(10),
    );
    assert_eq!(node.status.code(), Some(2));
    assert!(text(&node.stderr).contains("TROUPE_COOKIE"), "{node:?}");

    // Remote workers but no `--connect`: refused before running anything.
    let run = finish(
        troupe(&["run", &file, "go"], Some("sesame")),
        Duration::from_secs(10),
    );
    assert_eq!(run.status.code(), Some(2));
    let err = text(&run.stderr);
    assert!(err.contains("--connect") && err.contains("worker"), "{err}");

    // `--connect` without a cookie.
    let run = finish(
        troupe(&["run", &file, "go", "--connect", "127.0.0.1:9"], None),
        Duration::from_secs(10),
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("TROUPE_COOKIE"), "{run:?}");

    // A node the file places nothing on.
    let placed = write(
        dir.path(),
        "placed.yaml",
        "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
  b: {model: m, node: b}
workflow: {sequential: {participants: [a, b]}}
",
    );
    let node = finish(
        troupe(
            &[
                "node",
                "--config",
                &placed.to_string_lossy(),
                "--name",
                "z",
                "--listen",
                "127.0.0.1:0",
            ],
            Some("sesame"),
        ),
        Duration::from_secs(10),
    );
    assert_eq!(node.status.code(), Some(2));
    let err = text(&node.stderr);
    assert!(
        err.contains("places no agent on node `z`") && err.contains("(it places agents on: b)"),
        "{err}"
    );
}
