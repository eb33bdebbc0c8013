//! One owner per run, through the `troupe` binary, on SQLite, on the
//! directory store and on PostgreSQL: of two `--resume` of one run started together exactly
//! one runs and the other exits 2 naming the holder (pid, host, since); a
//! run whose holder was killed with `kill -9` is taken over by the next
//! `--resume`; `--run-id` of a stored run exits 2 unless `--replace`.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]
#![cfg(unix)]

mod common;
use common::{lines, listed, result_line, run, text, troupe, until, wait, write};

use std::process::Output;
use std::time::Duration;

const SQLITE: &str = "{store: sqlite, path: state/runs.db}";
const DIR: &str = "{store: dir, path: state}";

/// Three steps; the writer takes `delay`; checkpoints in `store`.
fn steps(delay: &str, store: &str) -> String {
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
checkpoint: {store}
"
    )
}

/// How many agent turns a `--events jsonl` run started.
fn turns_started(out: &Output) -> usize {
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"agent_started\""))
        .count()
}

/// Asserts that `err` refuses run `run_id` naming holder `pid`.
fn names_holder(err: &str, run_id: &str, pid: u32) {
    assert!(
        err.contains(&format!("run `{run_id}` is being run by pid {pid} on ")),
        "{err}"
    );
    assert!(err.contains(", since 20"), "{err}");
}

fn racing_resumes(store: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "steps.yaml", &steps("5s", store));
    let cfg = cfg.to_str().expect("utf-8");

    // A run under way: a resume of it is refused, naming its process.
    let mut first = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r1", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(first.stdout.take().expect("stdout"));
    until(&stdout, &["\"agent_started\"", "writer"]);
    let refused = run(
        dir.path(),
        &["run", "--events", "jsonl", "--resume", "r1", cfg],
    );
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    names_holder(&err, "r1", first.id());
    assert_eq!(turns_started(&refused), 0);

    // `kill -9`: the lease is left behind by a dead process.
    first.kill().expect("kill -9");
    first.wait().expect("reaped");

    // Two resumes at once: one takes the run over, the other is refused
    // naming it.
    let spawn = || {
        troupe(
            dir.path(),
            &["run", "--events", "jsonl", "--resume", "r1", cfg],
        )
        .spawn()
        .expect("start")
    };
    let (a, b) = (spawn(), spawn());
    let (pid_a, pid_b) = (a.id(), b.id());
    let a_out = std::thread::spawn(move || wait(a, Duration::from_secs(60)));
    let b_out = wait(b, Duration::from_secs(60));
    let a_out = a_out.join().expect("waiter");
    let (ran, refused, holder) = match (a_out.status.code(), b_out.status.code()) {
        (Some(0), Some(2)) => (a_out, b_out, pid_a),
        (Some(2), Some(0)) => (b_out, a_out, pid_b),
        other => panic!(
            "expected one run and one refusal, got {other:?}\n{}\n{}",
            text(&a_out.stderr),
            text(&b_out.stderr)
        ),
    };
    names_holder(&text(&refused.stderr), "r1", holder);
    assert_eq!(turns_started(&refused), 0);
    // The one that ran carried the run on from the planner's checkpoint.
    assert_eq!(turns_started(&ran), 2, "{}", text(&ran.stdout));
    let result = result_line(&ran);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["final_response"], "final: outline and draft");
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
}

#[test]
fn sqlite_one_of_two_resumes_runs_and_a_killed_holder_is_taken_over() {
    racing_resumes(SQLITE);
}

#[test]
fn dir_one_of_two_resumes_runs_and_a_killed_holder_is_taken_over() {
    racing_resumes(DIR);
}

#[test]
fn postgres_one_of_two_resumes_runs_and_a_killed_holder_is_taken_over() {
    let Some(url) = common::pg::fresh_db("leases") else {
        return;
    };
    racing_resumes(&format!("{{store: postgres, url: \"{url}\"}}"));
}

fn reused_run_id(store: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "quick.yaml", &steps("0s", store));
    let cfg = cfg.to_str().expect("utf-8");
    let first = run(dir.path(), &["run", "-q", "--run-id", "r1", cfg, "go"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));

    let again = run(dir.path(), &["run", "-q", "--run-id", "r1", cfg, "again"]);
    let err = text(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("run `r1` already exists in the"), "{err}");
    assert!(
        err.contains("--resume r1") && err.contains("--replace"),
        "{err}"
    );
    assert!(again.stdout.is_empty());

    let replaced = run(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            "--run-id",
            "r1",
            "--replace",
            cfg,
            "again",
        ],
    );
    assert_eq!(
        replaced.status.code(),
        Some(0),
        "{}",
        text(&replaced.stderr)
    );
    assert_eq!(turns_started(&replaced), 3);
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["run_id"], "r1");
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");

    // `--replace` does not take a run another process is running.
    let slow = write(dir.path(), "slow.yaml", &steps("5s", store));
    let slow = slow.to_str().expect("utf-8");
    let mut live = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r2", slow, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(live.stdout.take().expect("stdout"));
    until(&stdout, &["\"agent_started\"", "writer"]);
    let refused = run(
        dir.path(),
        &["run", "-q", "--run-id", "r2", "--replace", slow, "go"],
    );
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    names_holder(&err, "r2", live.id());
    live.kill().expect("kill");
    live.wait().expect("reaped");
}

#[test]
fn sqlite_run_id_reuse_is_refused_unless_replace() {
    reused_run_id(SQLITE);
}

#[test]
fn dir_run_id_reuse_is_refused_unless_replace() {
    reused_run_id(DIR);
}

/// `--replace` needs `--run-id`.
#[test]
fn replace_without_run_id_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "quick.yaml", &steps("0s", SQLITE));
    let out = run(
        dir.path(),
        &["run", "--replace", cfg.to_str().expect("utf-8"), "go"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--run-id"),
        "{}",
        text(&out.stderr)
    );
}

/// `troupe serve` holds the lease of the runs it drives: a `--resume` of
/// one under way exits 2 naming the server's process.
#[test]
fn a_run_serve_drives_is_not_resumed_elsewhere_meanwhile() {
    use common::serve::{Server, client, json_of};
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "steps.yaml", &steps("5s", SQLITE));
    let cfg = cfg.to_str().expect("utf-8");
    let s = Server::start(dir.path(), &[cfg], &[]);
    let started = client()
        .post(s.url("/runs"))
        .json(&serde_json::json!({"task": "go"}))
        .send()
        .expect("POST /runs");
    assert_eq!(started.status(), 201);
    let id = json_of(started)["id"]
        .as_str()
        .expect("a run id")
        .to_string();
    // Its first checkpoint (the planner's) is in the store while the
    // writer thinks.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !listed(dir.path(), cfg)
        .iter()
        .any(|r| r["run_id"] == id.as_str())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "run {id} never stored"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = run(dir.path(), &["run", "-q", "--resume", &id, cfg]);
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    names_holder(&err, &id, s.child.id());
}
