//! The `troupe` binary as a user runs it: every example config offline,
//! validation exit codes, JSON-lines events, stdin prompts, the committed
//! schema, chat sessions that resume, and Ctrl-C.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

mod common;
use common::wait;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `troupe` command that runs offline whatever the caller's environment.
fn troupe(args: &[&str]) -> Command {
    let mut cmd = Command::new(TROUPE);
    cmd.args(args)
        .current_dir(root())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        // Logs and span export only where a test asks for them.
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("TROUPE_CAPTURE_CONTENT")
        .env_remove("TROUPE_EXE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn run(args: &[&str]) -> Output {
    wait(
        troupe(args).spawn().expect("start troupe"),
        Duration::from_secs(30),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// How an example run ends.
enum Ends {
    /// Completed (exit 0), with this final response.
    Answer(&'static str),
    /// Waiting for input (exit 3): this agent asks this question.
    Asks(&'static str, &'static str),
}

#[test]
fn every_example_runs_offline_with_its_final_response() {
    use Ends::{Answer, Asks};
    let table: &[(&str, Ends)] = &[
        (
            "round_robin.yaml",
            Answer(
                "Each actor keeps an inbox, reads one letter at a time;\nno locks, no shared pen: just messages in line.",
            ),
        ),
        (
            "selector.yaml",
            Answer("fn reverse(s: &str) -> String { s.chars().rev().collect() }"),
        ),
        (
            "swarm.yaml",
            Answer("I have refunded the duplicate charge of 49.99; it will show within 5 days."),
        ),
        (
            "sequential.yaml",
            Answer(
                "Actors take one message at a time, share nothing, and are restarted when they crash: a safe home for LLM agents.",
            ),
        ),
        (
            "map_reduce.yaml",
            Answer("Rust: safety without GC; Go: simple concurrency; Zig: explicit control."),
        ),
        (
            "qa_loop.yaml",
            Answer("Published: Bonjour l'équipe, merci pour votre lecture"),
        ),
        (
            "router_pipeline.yaml",
            Answer(
                "We will re-send a corrected invoice today, and version 2.4.1 fixes the login crash.",
            ),
        ),
        (
            "mcp_team.yaml",
            Answer(
                "Your espresso machine (order A-1001) was delivered on 4 May 2024. You can return it for a full refund within 30 days.",
            ),
        ),
        (
            "nested.yaml",
            Answer("Published: troupe 2.0 is out: declarative teams in YAML."),
        ),
        (
            "agent_as_tool.yaml",
            Answer(
                "Yes: Rust removes most memory-safety bugs (checked), and large companies already ship it.",
            ),
        ),
        (
            "planning.yaml",
            Answer(
                "Lunch is on its way: an oat-milk latte from Starbucks and a McChicken meal from McDonald's.",
            ),
        ),
        (
            "nested_legal.yaml",
            Answer("CLEARED: no commitments beyond the release itself."),
        ),
        (
            "parallel_retry.yaml",
            Answer("Laptop A: lighter and 400 EUR cheaper; take B only if you need 32 GB."),
        ),
        (
            "newsroom.yaml",
            Answer(
                "RUST 2024 EDITION SHIPS — Rust's 2024 edition shipped with Rust 1.85, nine years after 1.0; like every edition, it changes defaults without breaking old code, because each crate picks its own edition.",
            ),
        ),
        ("magentic.yaml", Answer("Rust 1.0 shipped on 15 May 2015.")),
        (
            "reasoner.yaml",
            Answer("Oat milk: oats and water, foams well, a little sugar."),
        ),
        (
            "durable.yaml",
            Answer(
                "Interrupted runs resume where they stopped (`troupe run FILE --resume ID`); `troupe runs FILE` lists them.",
            ),
        ),
        (
            "human_in_the_loop.yaml",
            Asks(
                "clerk",
                "Which order was charged twice, and how much was each charge?",
            ),
        ),
    ];
    // Every example in the directory is in the table.
    let examples = root().join("examples/configs");
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .expect("examples/configs")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = table.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed, "an example config is missing from the table");

    // Run from a copy, so that a store an example keeps lands there.
    let dir = tempfile::tempdir().expect("tempdir");
    for file in &files {
        std::fs::copy(examples.join(file), dir.path().join(file)).expect("copy an example");
    }
    for (file, ends) in table {
        let path = dir.path().join(file);
        let path = path.to_str().expect("utf-8");
        let quiet = run(&["run", "--quiet", path, "a task"]);
        // The pretty view says who spoke, and ends with the final response.
        let out = run(&["run", path, "a task"]);
        let stdout = text(&out.stdout);
        assert!(stdout.contains("● "), "{file}: no speaker shown:\n{stdout}");
        assert!(
            !stdout.contains("\x1b["),
            "{file}: colour without a terminal"
        );
        match ends {
            Answer(expected) => {
                for out in [&quiet, &out] {
                    assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
                }
                assert_eq!(text(&quiet.stdout).trim_end(), *expected, "{file}");
                assert!(stdout.trim_end().ends_with(expected), "{file}:\n{stdout}");
            }
            // It waits for the user, saying who asks what, and how to answer.
            Asks(agent, question) => {
                for out in [&quiet, &out] {
                    let err = text(&out.stderr);
                    assert_eq!(out.status.code(), Some(3), "{file}: {err}");
                    assert!(
                        err.contains(&format!("? {agent} asks ({agent}-")),
                        "{file}: {err}"
                    );
                    assert!(err.contains(&format!("): {question}\n")), "{file}: {err}");
                    assert!(
                        err.contains(&format!("troupe run {path} --resume ")),
                        "{file}: {err}"
                    );
                }
                assert_eq!(text(&quiet.stdout).trim_end(), "", "{file}");
                assert!(
                    stdout.contains(&format!("? {agent} asks: {question}")),
                    "{file}:\n{stdout}"
                );
            }
        }
    }
}

#[test]
fn the_flagship_shows_tools_and_tokens() {
    let out = run(&["run", "examples/configs/newsroom.yaml", "Rust 2024"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("↳ calculator({\"expression\":\"2024 - 2015\"})"),
        "{stdout}"
    );
    assert!(stdout.contains("= 9"), "{stdout}");
    assert!(stdout.contains("tokens"), "{stdout}");
    assert!(stdout.contains("■ completed · 7 turns"), "{stdout}");
}

#[test]
fn events_as_json_lines() {
    let out = run(&[
        "run",
        "--events",
        "jsonl",
        "examples/configs/qa_loop.yaml",
        "Hello",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(lines[0]["type"], "run_started");
    assert!(lines.iter().any(|l| l["type"] == "message_produced"));
    let last = lines.last().expect("a result line");
    assert_eq!(last["type"], "result");
    assert_eq!(last["status"], "completed");
    // Events are written on a thread of their own: the CLI waits for the
    // last of them before the result line and the exit.
    let before = &lines[lines.len() - 2];
    assert_eq!(before["type"], "run_finished", "{before}");
    assert!(lines.iter().all(|l| l["type"] != "events_dropped"));
    assert_eq!(
        last["final_response"],
        "Published: Bonjour l'équipe, merci pour votre lecture"
    );
}

#[test]
fn prompt_from_stdin() {
    let mut child = troupe(&["run", "-q", "examples/configs/sequential.yaml", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"why actors suit agents\n")
        .expect("write the task");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("Actors take one message"));
}

#[test]
fn validate_and_exit_codes() {
    let ok = run(&["validate", "examples/configs/newsroom.yaml"]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(text(&ok.stdout).contains("valid"));

    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "version: 1\nagents:\n  a:\n    model: nope\n    extra: 1\n",
    )
    .expect("write");
    let out = run(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.yaml:4:12: field `agents.a.model`: unknown model `nope`"),
        "{err}"
    );
    assert!(
        err.contains("bad.yaml:5:5: field `agents.a.extra`: unknown field `extra`"),
        "{err}"
    );
    // `run` refuses it the same way, before doing anything.
    let out = run(&["run", bad.to_str().expect("utf-8 path"), "x"]);
    assert_eq!(out.status.code(), Some(2));

    let missing = run(&["validate", "no/such/file.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("cannot read"));

    let usage = run(&["frobnicate"]);
    assert_eq!(usage.status.code(), Some(2));

    // A run that fails (a script that runs out) exits 1.
    let short = dir.path().join("short.yaml");
    std::fs::write(
        &short,
        "version: 1\nmodels: {m: {provider: scripted}}\nagents:\n  a: {model: m, script: [one]}\nworkflow:\n  steps: [{agent: a}, {id: again, agent: a}]\n",
    )
    .expect("write");
    let out = run(&["run", short.to_str().expect("utf-8 path"), "x"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("ran out of replies"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let out = run(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let committed = std::fs::read_to_string(root().join("schema/troupe.schema.json"))
        .expect("schema/troupe.schema.json");
    assert_eq!(
        text(&out.stdout).trim_end(),
        committed.trim_end(),
        "schema/troupe.schema.json is stale: run `cargo run -- schema > schema/troupe.schema.json`"
    );
    let schema: serde_json::Value = serde_json::from_str(&committed).expect("JSON");
    assert_eq!(schema["title"], "troupe config");
    assert!(schema["properties"]["workflow"].is_object());
}

#[test]
fn a_closed_stdout_fails_without_a_panic() {
    for args in [
        &["schema"][..],
        &["validate", "examples/configs/qa_loop.yaml"],
        &["graph", "examples/configs/qa_loop.yaml"],
    ] {
        // A pipe whose reader is gone before troupe writes: every write is
        // EPIPE (`troupe schema | head -1` once `head` has quit).
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = wait(
            troupe(args).stdout(writer).spawn().expect("start troupe"),
            Duration::from_secs(30),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_run_whose_output_is_lost_fails() {
    let cfg = "examples/configs/qa_loop.yaml";
    for args in [
        &["run", cfg, "a task"][..],
        &["run", "--quiet", cfg, "a task"],
        &["run", "--events", "jsonl", cfg, "a task"],
    ] {
        // A full disk: every write fails with ENOSPC.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let out = wait(
            troupe(args).stdout(full).spawn().expect("start troupe"),
            Duration::from_secs(30),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");

        // A reader that went away: a quiet failure.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = wait(
            troupe(args).stdout(writer).spawn().expect("start troupe"),
            Duration::from_secs(30),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("cannot write"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A small structural parser of the Mermaid flowcharts `troupe graph`
/// prints: a header, node declarations, and edges between declared nodes.
mod mermaid {
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Eq)]
    pub struct Edge {
        pub from: String,
        pub to: String,
        pub dotted: bool,
        pub label: Option<String>,
    }

    pub struct Chart {
        pub nodes: BTreeMap<String, String>,
        pub edges: Vec<Edge>,
    }

    fn id(s: &str) -> Result<&str, String> {
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(s)
        } else {
            Err(format!("bad node id {s:?}"))
        }
    }

    fn quoted(s: &str) -> Result<String, String> {
        let inner = s
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .ok_or_else(|| format!("label not quoted: {s:?}"))?;
        if inner.contains('"') {
            return Err(format!("raw quote in label {inner:?}"));
        }
        Ok(inner.to_string())
    }

    pub fn parse(text: &str) -> Result<Chart, String> {
        let mut lines = text.lines();
        let header = lines.next().ok_or("empty chart")?;
        if !matches!(header.trim(), "flowchart TD" | "flowchart LR" | "graph TD") {
            return Err(format!("bad header {header:?}"));
        }
        let mut nodes = BTreeMap::new();
        let mut edges = Vec::new();
        for line in lines {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            // `id --> id` is an edge, `id["label"]` a node (labels may hold spaces).
            let is_edge = line
                .find([' ', '[', '('])
                .is_some_and(|i| line[i..].starts_with(' '));
            if let (true, Some((from, rest))) = (is_edge, line.split_once(' ')) {
                let (dotted, rest) = if let Some(r) = rest.strip_prefix("-.->") {
                    (true, r)
                } else if let Some(r) = rest.strip_prefix("-->") {
                    (false, r)
                } else {
                    return Err(format!("bad edge {line:?}"));
                };
                let (label, to) = match rest.strip_prefix('|') {
                    Some(r) => {
                        let (l, to) = r
                            .split_once("| ")
                            .ok_or_else(|| format!("bad label in {line:?}"))?;
                        (Some(quoted(l)?), to)
                    }
                    None => (None, rest.trim_start()),
                };
                edges.push(Edge {
                    from: id(from)?.to_string(),
                    to: id(to.trim())?.to_string(),
                    dotted,
                    label,
                });
            } else {
                let (name, shape) = line
                    .find(['[', '('])
                    .map(|i| line.split_at(i))
                    .ok_or_else(|| format!("bad line {line:?}"))?;
                let inner = shape
                    .strip_prefix("([")
                    .and_then(|s| s.strip_suffix("])"))
                    .or_else(|| shape.strip_prefix('[').and_then(|s| s.strip_suffix(']')))
                    .ok_or_else(|| format!("bad node shape {line:?}"))?;
                nodes.insert(id(name)?.to_string(), quoted(inner)?);
            }
        }
        for e in &edges {
            for end in [&e.from, &e.to] {
                if !nodes.contains_key(end) {
                    return Err(format!("edge to undeclared node {end}"));
                }
            }
        }
        Ok(Chart { nodes, edges })
    }
}

#[test]
fn graph_of_the_qa_loop_is_valid_mermaid() {
    let out = run(&["graph", "examples/configs/qa_loop.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chart = mermaid::parse(&text(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}:\n{}", text(&out.stdout)));
    let label = |id: &str| chart.nodes.get(id).cloned().unwrap_or_default();
    assert_eq!(label("n_translator"), "translator");
    assert_eq!(label("n_qa"), "qa");
    assert_eq!(label("n_publisher"), "publisher");
    let edge = |from: &str, to: &str| chart.edges.iter().find(|e| e.from == from && e.to == to);
    assert!(edge("n_user", "n_translator").is_some());
    assert!(edge("n_translator", "n_qa").is_some_and(|e| !e.dotted && e.label.is_none()));
    let back = edge("n_qa", "n_translator").expect("the loop back");
    assert!(back.dotted);
    assert!(
        back.label
            .as_deref()
            .is_some_and(|l| l.starts_with("loop") && l.contains("REJECT"))
    );
    let on = edge("n_qa", "n_publisher").expect("the way out");
    assert!(on.label.as_deref().is_some_and(|l| l.contains("APPROVE")));

    // Every example draws.
    for entry in std::fs::read_dir(root().join("examples/configs")).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let out = run(&["graph", path.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(0));
        mermaid::parse(&text(&out.stdout)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn write_config(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write config");
    p
}

#[test]
fn chat_keeps_the_conversation_in_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        "chat.yaml",
        "version: 1
models:
  m: {provider: scripted, when_exhausted: cycle, replies: [\"first answer\", \"second answer\"]}
agents:
  bot: {model: m}
checkpoint: {store: sqlite, path: state/chat.db}
",
    );
    let cfg = config.to_str().expect("utf-8");
    let chat = |input: &str, new: bool| {
        let mut args = vec!["chat", "--quiet", "--session", "s1", cfg];
        if new {
            args.push("--new");
        }
        let mut child = troupe(&args)
            .stdin(Stdio::piped())
            .spawn()
            .expect("start chat");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        wait(child, Duration::from_secs(30))
    };
    let out = chat("hello\nand again\n/exit\n", true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first answer\nsecond answer\n");

    // A new process resumes the conversation from the store.
    let out = chat("/history\n", false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let history = text(&out.stdout);
    assert!(
        history.contains("user: hello") && history.contains("bot: second answer"),
        "{history}"
    );

    // Without --quiet, the session says it resumes, and shows who speaks.
    let mut child = troupe(&["chat", "--session", "s1", cfg])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start chat");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"once more\n")
        .expect("write");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("resuming session `s1` (4 messages)"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("● bot"), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("first answer"),
        "{}",
        text(&out.stdout)
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_past_its_grace_period_exits_130_promptly_and_leaves_a_checkpoint() {
    use troupe::store::{CheckpointStore, FileStore};

    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let config = write_config(
        dir.path(),
        "slow.yaml",
        &format!(
            "version: 1
models:
  fast: {{provider: scripted, replies: [\"outline\"]}}
  slow: {{provider: scripted, delay: 60s, replies: [\"never\"]}}
agents:
  planner: {{model: fast}}
  writer: {{model: slow}}
workflow:
  steps: [{{agent: planner}}, {{agent: writer}}]
checkpoint: {{store: dir, path: {}}}
",
            store.display()
        ),
    );
    let mut child = troupe(&[
        "run",
        "--events",
        "jsonl",
        "--run-id",
        "interrupted-run",
        // The writer takes a minute: the graceful stop gives up at once.
        "--grace",
        "0",
        config.to_str().expect("utf-8"),
        "go",
    ])
    .spawn()
    .expect("start");
    // Wait until the slow writer is thinking.
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let started = line.contains("\"agent_started\"") && line.contains("writer");
            seen.push(line);
            if started {
                return (true, seen);
            }
        }
        (false, seen)
    });
    let (started, seen) = reader.join().expect("reader");
    assert!(started, "the writer never started:\n{}", seen.join("\n"));
    std::thread::sleep(Duration::from_millis(200));

    let sent = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = wait(child, Duration::from_secs(5));
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(1), "took {took:?} to exit");
    assert!(
        text(&out.stderr).contains("checkpoint"),
        "{}",
        text(&out.stderr)
    );

    // The checkpoint loads (and its checksum holds).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let files = FileStore::open(&store).expect("the store");
        let latest = files
            .latest("interrupted-run")
            .await
            .expect("load")
            .expect("a checkpoint");
        latest.verify().expect("checksum");
        assert!(
            !files
                .list("interrupted-run")
                .await
                .expect("list")
                .is_empty()
        );
    });
}

/// A tiny OpenAI-compatible server on 127.0.0.1: answers every chat
/// completion with `answer`, and counts the requests.
fn fake_openai(answer: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.fetch_add(1, Ordering::SeqCst);
            let reply = serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": answer}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, count)
}

#[test]
fn the_same_file_runs_against_an_endpoint() {
    let (url, requests) = fake_openai("from the server");
    let out = wait(
        troupe(&["run", "-q", "examples/configs/sequential.yaml", "x"])
            .env("OPENAI_BASE_URL", &url)
            .env("OPENAI_MODEL", "fake-model")
            .spawn()
            .expect("start"),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "from the server");
    // Three agents, one call each: no script was used.
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn a_device_or_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let nests = write_config(
        dir.path(),
        "nests.yaml",
        "version: 1\nmodels: {m: {provider: scripted}}\nagents: {a: {model: m}}\nworkflows:\n  x: {file: pipe.yaml}\n  z: {file: /dev/zero}\nworkflow:\n  steps: [{workflow: x}, {workflow: z}]\n",
    );
    let fifo = fifo.to_str().expect("utf-8 path");
    let nests = nests.to_str().expect("utf-8 path");
    for (args, says) in [
        (&["validate", fifo][..], "not a regular file (a FIFO)"),
        (
            &["validate", "/dev/zero"],
            "not a regular file (a character device)",
        ),
        (&["run", fifo, "x"], "not a regular file (a FIFO)"),
        (
            &["validate", nests],
            "nests.yaml:5:13: field `workflows.x.file`: cannot read",
        ),
        (
            &["validate", nests],
            "nests.yaml:6:13: field `workflows.z.file`: cannot read `/dev/zero`: not a regular file",
        ),
    ] {
        let started = Instant::now();
        // A hang here would block on the FIFO or read /dev/zero forever:
        // `wait` kills it after the timeout and the exit code is not 2.
        let out = wait(
            troupe(args).spawn().expect("start troupe"),
            Duration::from_secs(10),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_config_past_the_size_cap_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A valid config, padded with a comment to one byte past the cap.
    let head =
        "version: 1\nmodels: {m: {provider: scripted, replies: [hi]}}\nagents: {a: {model: m}}\n# ";
    let cap = usize::try_from(troupe::config::MAX_CONFIG_BYTES).expect("a usize cap");
    let body = format!("{head}{}\n", "x".repeat(cap - head.len()));
    let big = write_config(dir.path(), "big.yaml", &body);
    let out = run(&["validate", big.to_str().expect("utf-8 path")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("big.yaml: cannot read: larger than the 8388608-byte limit"),
        "{err}"
    );
    // One byte less is read (and valid).
    let body = format!("{head}{}\n", "x".repeat(cap - head.len() - 1));
    let fits = write_config(dir.path(), "fits.yaml", &body);
    let out = run(&["validate", fits.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `validate` on `body` (written as `name` in a fresh directory), with
/// `extra` arguments: the exit code and stderr.
fn validate_text(name: &str, body: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), name, body);
    let mut args = vec!["validate"];
    args.extend_from_slice(extra);
    args.push(path.to_str().expect("utf-8 path"));
    let out = troupe(&args)
        .env_remove("TROUPE_TEST_UNSET_VAR")
        .spawn()
        .expect("start troupe");
    let out = wait(out, Duration::from_secs(30));
    (out.status.code(), text(&out.stderr))
}

#[test]
fn validate_builds_the_router_as_run_does() {
    // `b` is a participant no route reaches and whose messages go
    // nowhere: the router refuses it, and validate says so with a place.
    let body = "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a: {model: m}\n  b: {model: m}\nworkflow:\n  router:\n    participants: [a, b]\n    routes:\n      - {from: user, to: a}\n    output: [a]\n";
    let (code, err) = validate_text("unreachable.yaml", body, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unreachable.yaml:8:3: field `workflow.router`: workflow `workflow`: invalid router: agent \"b\" reaches nobody"),
        "{err}"
    );
    // `run` refuses it the same way: an invalid config, exit 2.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), "unreachable.yaml", body);
    let out = run(&["run", path.to_str().expect("utf-8 path"), "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn validate_warns_of_router_cycles_and_denies_them_on_request() {
    let body = "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a: {model: m}\n  b: {model: m}\nworkflow:\n  max_turns: 4\n  router:\n    routes:\n      - {from: user, to: a}\n      - {from: a, to: b}\n      - {from: b, to: a}\n    output: [b]\n";
    let warning = "cycle.yaml:9:3: warning: field `workflow.router`: workflow `workflow`: routes among \"a\", \"b\" form a cycle";
    let (code, err) = validate_text("cycle.yaml", body, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(warning), "{err}");
    let (code, err) = validate_text("cycle.yaml", body, &["--deny-warnings"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(warning), "{err}");
    assert!(err.contains("denied by --deny-warnings"), "{err}");
}

#[test]
fn validate_warns_of_unused_models_and_agents() {
    let body = "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\n  spare: {provider: scripted, replies: [x]}\nagents:\n  a: {model: m}\n  idle: {model: spare}\nworkflow:\n  sequential: {participants: [a]}\n";
    let (code, err) = validate_text("unused.yaml", body, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("unused.yaml:4:3: warning: field `models.spare`: model `spare` is not used by the workflow"),
        "{err}"
    );
    assert!(
        err.contains("unused.yaml:7:3: warning: field `agents.idle`: agent `idle` is not used by the workflow"),
        "{err}"
    );
    assert!(!err.contains("`models.m`"), "{err}");
    let (code, _) = validate_text("unused.yaml", body, &["--deny-warnings"]);
    assert_eq!(code, Some(2));
}

#[test]
fn validate_reports_what_run_would_refuse_with_a_place() {
    let cases: [(&str, &str, &str); 4] = [
        (
            "inline.yaml",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a: {model: m}\nworkflows:\n  x:\n    sequential: {participants: [a, y]}\n  y:\n    sequential: {participants: [x]}\nworkflow:\n  sequential: {participants: [x]}\n",
            "inline.yaml:7:3: field `workflows.x`: workflow `x` contains itself (x -> y -> x)",
        ),
        (
            "open.yaml",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok], model: \"${X\"}\nagents:\n  a: {model: m}\n",
            "open.yaml:3:42: field `models.m.model`: model `m`: `${` without `}`",
        ),
        (
            "space.yaml",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a:\n    model: m\n    tools:\n      - mcp: {command: \"${a b}\"}\n",
            "space.yaml:8:15: field `agents.a.tools[0].mcp.command`: agent `a`: MCP server: `${a b}` is not a variable reference",
        ),
        (
            "unset.yaml",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a:\n    model: m\n    tools:\n      - mcp: {command: troupe, args: [mcp-demo, \"${TROUPE_TEST_UNSET_VAR}\"]}\n",
            "unset.yaml:8:49: field `agents.a.tools[0].mcp.args[1]`: agent `a`: MCP server: environment variable TROUPE_TEST_UNSET_VAR is not set",
        ),
    ];
    for (name, body, expected) in cases {
        let (code, err) = validate_text(name, body, &[]);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(expected), "{name}: {err}");
    }
}

#[test]
fn validate_refuses_a_store_path_that_cannot_be_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("taken"), "a file").expect("write");
    let body = "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\nagents:\n  a: {model: m}\ncheckpoint:\n  store: sqlite\n  path: taken/runs.db\n";
    let path = write_config(dir.path(), "store.yaml", body);
    let out = run(&["validate", path.to_str().expect("utf-8 path")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "store.yaml:8:3: field `checkpoint.path`: the checkpoint store cannot be opened:"
        ) && err.contains("taken` is a file, not a directory"),
        "{err}"
    );
    // Checking created nothing.
    assert!(dir.path().join("taken").is_file());
    // A store path that can be made passes, and is not made by checking.
    let fine = write_config(
        dir.path(),
        "fine.yaml",
        &body.replace("taken/runs.db", "later/runs.db"),
    );
    let out = run(&["validate", fine.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.path().join("later").exists());
}
