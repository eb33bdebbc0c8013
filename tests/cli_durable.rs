//! Durable runs through the `troupe` binary: Ctrl-C stops gracefully (and
//! a second one aborts), `troupe runs` lists what the store holds,
//! `--resume` carries a run on (and refuses a changed config), answers to
//! questions, and chat sessions that must exist.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{lines, listed, result_line, run, text, troupe, until, wait, write};

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Three steps; the writer takes `delay`.
fn steps(delay: &str) -> String {
    format!(
        "version: 1
models:
  fast: {{provider: scripted, replies: [\"outline\"]}}
  slow: {{provider: scripted, delay: {delay}, replies: [\"draft\"]}}
agents:
  planner: {{model: fast}}
  writer: {{model: slow}}
  editor: {{model: fast, script: [\"final: outline and draft\"]}}
workflow:
  steps: [{{agent: planner}}, {{agent: writer}}, {{agent: editor}}]
checkpoint: {{store: sqlite, path: state/runs.db}}
"
    )
}

/// Sends `signal` (`INT`, `TERM`) to the child.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[cfg(unix)]
#[test]
fn ctrl_c_lets_the_turn_finish_and_resume_ends_as_an_uninterrupted_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "steps.yaml", &steps("1500ms"));
    let cfg = cfg.to_str().expect("utf-8");

    let whole = run(dir.path(), &["run", "-q", "--run-id", "whole", cfg, "go"]);
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole.stderr));

    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r1", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    until(&stdout, &["\"agent_started\"", "writer"]);
    signal(&child, "INT");
    let out = wait(child, Duration::from_secs(20));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!("resume with: troupe run {cfg} --resume r1")),
        "{err}"
    );
    // The writer's turn finished after the signal and was kept: the
    // checkpoint is the one after its superstep.
    let runs = listed(dir.path(), cfg);
    let r1 = runs
        .iter()
        .find(|r| r["run_id"] == "r1")
        .expect("r1 listed");
    assert_eq!(r1["status"], "interrupted", "{r1}");
    assert_eq!(r1["superstep"], 2, "{r1}");
    assert_eq!(r1["requests"], serde_json::json!([]));

    // Resuming runs the editor alone, and ends as the whole run did.
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", "--resume", "r1", cfg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let started: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"agent_started\""))
        .map(String::from)
        .collect();
    assert_eq!(started.len(), 1, "{started:?}");
    assert!(started[0].contains("editor"), "{started:?}");
    let result = result_line(&out);
    assert_eq!(result["status"], "completed");
    assert_eq!(result["final_response"], text(&whole.stdout).trim_end());
    assert_eq!(result["run_id"], "r1");
    let runs = listed(dir.path(), cfg);
    let r1 = runs.iter().find(|r| r["run_id"] == "r1").expect("r1");
    assert_eq!(r1["status"], "completed", "{r1}");
}

#[cfg(unix)]
#[test]
fn a_second_signal_aborts_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "steps.yaml", &steps("60s"));
    let cfg = cfg.to_str().expect("utf-8");
    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r2", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    let stderr = lines(child.stderr.take().expect("stderr"));
    until(&stdout, &["\"agent_started\"", "writer"]);
    // SIGTERM asks for a graceful stop as Ctrl-C does; the writer takes a
    // minute, so the run waits within its grace period…
    signal(&child, "TERM");
    until(&stderr, &["letting the turns under way finish"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "exited early"
    );
    // …until a second signal ends it at once.
    let sent = Instant::now();
    signal(&child, "INT");
    let out = wait(child, Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(130));
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    let rest: Vec<String> = stderr.try_iter().collect();
    assert!(rest.iter().any(|l| l.contains("--resume r2")), "{rest:?}");
    // The planner's superstep was checkpointed before the abort.
    let runs = listed(dir.path(), cfg);
    let r2 = runs.iter().find(|r| r["run_id"] == "r2").expect("r2");
    assert_eq!(r2["superstep"], 1, "{r2}");
    assert_eq!(r2["status"], "unfinished", "{r2}");
}

#[test]
fn resume_refuses_a_changed_config_and_an_unknown_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "steps.yaml", &steps("0s"));
    let cfg = cfg.to_str().expect("utf-8");
    for id in ["a", "b"] {
        let out = run(dir.path(), &["run", "-q", "--run-id", id, cfg, "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    // Newest first, with their status.
    let runs = listed(dir.path(), cfg);
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["run_id"].as_str()).collect();
    assert_eq!(ids, ["b", "a"]);
    assert!(runs.iter().all(|r| r["status"] == "completed"));
    // What each spent, from its last checkpoint.
    assert!(
        runs.iter()
            .all(|r| r["stats"]["total"]["turns"].as_u64().unwrap_or(0) > 0),
        "{runs:?}"
    );
    let table = run(dir.path(), &["runs", cfg]);
    let table = text(&table.stdout);
    assert!(table.starts_with("RUN "), "{table}");
    assert!(
        table.lines().nth(1).is_some_and(|l| l.starts_with("b ")),
        "{table}"
    );

    // `latest` is the newest.
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", "--resume", "latest", cfg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(result_line(&out)["run_id"], "b");

    let out = run(dir.path(), &["run", "--resume", "nope", cfg]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no run `nope` in the sqlite store at"),
        "{err}"
    );
    assert!(err.contains("known runs (newest first): b, a"), "{err}");

    let out = run(dir.path(), &["run", "--resume", "a", cfg, "a task"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a task cannot be given with --resume"));

    let out = run(
        dir.path(),
        &["run", "--resume", "a", "--answer", "q1=yes", cfg],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("run `a` has no question `q1`; it waits on: none"),
        "{err}"
    );

    // Another step: another topology.
    let changed = steps("0s").replace(
        "{agent: editor}]",
        "{agent: editor}, {id: again, agent: editor}]",
    );
    write(dir.path(), "steps.yaml", &changed);
    let out = run(dir.path(), &["run", "--resume", "a", cfg]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("belongs to another workflow topology"),
        "{err}"
    );
    assert!(
        err.contains("the config changed since the checkpoint was saved"),
        "{err}"
    );
}

#[test]
fn runs_and_resume_need_a_store_that_outlives_the_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = steps("0s").replace("checkpoint: {store: sqlite, path: state/runs.db}\n", "");
    let memory = steps("0s").replace("{store: sqlite, path: state/runs.db}", "{store: memory}");
    for (name, body, says) in [
        ("none.yaml", none, "has none; add `checkpoint:"),
        (
            "memory.yaml",
            memory,
            "keeps its checkpoint store in memory",
        ),
    ] {
        let cfg = write(dir.path(), name, &body);
        let cfg = cfg.to_str().expect("utf-8");
        for args in [&["runs", cfg][..], &["run", "--resume", "latest", cfg]] {
            let out = run(dir.path(), args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }
}

#[test]
fn chat_sessions_must_exist_unless_new() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "chat.yaml",
        "version: 1
models:
  m: {provider: scripted, when_exhausted: cycle, replies: [\"hi there\"]}
agents:
  bot: {model: m}
checkpoint: {store: sqlite, path: chat.db}
",
    );
    let cfg = cfg.to_str().expect("utf-8");
    let chat = |args: &[&str], input: &str| {
        let mut child = troupe(dir.path(), args)
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
    let out = chat(&["chat", "-q", "--session", "s1", cfg], "hello\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no session `s1`"), "{err}");
    assert!(err.contains("--new"), "{err}");

    let out = chat(&["chat", "-q", "--session", "s1", "--new", cfg], "hello\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi there\n");
    // Now it exists: it continues, and `--new` would start over it.
    let out = chat(&["chat", "-q", "--session", "s1", cfg], "again\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = chat(&["chat", "-q", "--session", "s1", "--new", cfg], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("exists already"));

    let out = chat(&["chat", "-q", "--session", "s2", "--new", cfg], "yo\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(dir.path(), &["chat", "--list", cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "s1\t4 messages\ns2\t2 messages\n");
}

/// An agent that asks the user, answered across processes.
#[test]
fn a_waiting_run_exits_3_and_answers_carry_it_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "ask.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools: [ask_user]
    script:
      - {tool_call: {name: ask_user, arguments: {question: \"Which tone?\"}}}
      - \"Tone noted.\"
checkpoint: {store: sqlite, path: runs.db}
",
    );
    let cfg = cfg.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            "--no-input",
            "--run-id",
            "w",
            cfg,
            "write",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["status"], "waiting_for_input");
    let request = &result["requests"][0];
    assert_eq!(request["agent"], "clerk");
    assert_eq!(request["prompt"], "Which tone?");
    let id = request["id"].as_str().expect("a request id");
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs[0]["status"], "waiting_for_input");
    assert_eq!(runs[0]["requests"][0]["id"], id);

    let out = run(
        dir.path(),
        &["run", "--resume", "w", "--answer", "nope=x", cfg],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(id), "{}", text(&out.stderr));

    let answer = format!("{id}=friendly");
    let out = run(
        dir.path(),
        &["run", "-q", "--resume", "w", "--answer", &answer, cfg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "Tone noted.");
}
