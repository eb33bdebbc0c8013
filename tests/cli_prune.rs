//! Retention: `troupe runs prune` on a SQLite store holding 1,000 finished
//! runs (made by `troupe serve`, as users make them) older than the age
//! given: `--dry-run` changes nothing, the real prune deletes them and the
//! file shrinks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::serve::{Server, client, json_of};
use common::{run, text, write};
use serde_json::json;

/// One quick scripted agent, checkpointed in SQLite.
const QUICK: &str = "version: 1
name: quick
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  clerk: {model: m, script: [\"done\"]}
checkpoint: {store: sqlite, path: state/runs.db}
";

const RUNS: usize = 1000;

/// The database and its WAL, in bytes.
fn on_disk(dir: &Path) -> u64 {
    ["runs.db", "runs.db-wal"]
        .iter()
        .map(|f| std::fs::metadata(dir.join("state").join(f)).map_or(0, |m| m.len()))
        .sum()
}

fn listed(dir: &Path) -> usize {
    let out = run(dir, &["runs", "quick.yaml", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().count()
}

#[test]
fn prune_deletes_finished_runs_older_than_the_age_and_the_file_shrinks() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "quick.yaml", QUICK);
    {
        let s = Server::start(dir.path(), &["quick.yaml", "--max-runs", "2000"], &[]);
        let c = client();
        let task = "a task long enough to weigh something in the store ".repeat(40);
        for _ in 0..RUNS {
            let r = c
                .post(s.url("/runs"))
                .json(&json!({"task": task}))
                .send()
                .unwrap();
            assert_eq!(r.status(), 201);
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let runs = json_of(c.get(s.url("/runs")).send().unwrap());
            let all = runs.as_array().unwrap();
            if all.len() == RUNS && all.iter().all(|r| r["status"] == "completed") {
                break;
            }
            assert!(Instant::now() < deadline, "the runs never all completed");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(listed(dir.path()), RUNS);
    std::thread::sleep(Duration::from_millis(1100));
    let before = on_disk(dir.path());

    let dry = run(
        dir.path(),
        &[
            "runs",
            "prune",
            "quick.yaml",
            "--older-than",
            "1s",
            "--dry-run",
        ],
    );
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    let said = text(&dry.stdout);
    assert!(
        said.starts_with(&format!("would delete {RUNS} finished run(s)")),
        "{said}"
    );
    assert_eq!(on_disk(dir.path()), before, "--dry-run changed the store");
    assert_eq!(listed(dir.path()), RUNS);

    // A long age: nothing is old enough.
    let none = run(
        dir.path(),
        &["runs", "prune", "quick.yaml", "--older-than", "1h"],
    );
    assert!(
        text(&none.stdout).starts_with("deleted 0 finished run(s)"),
        "{}",
        text(&none.stdout)
    );
    assert_eq!(listed(dir.path()), RUNS);

    let out = run(
        dir.path(),
        &["runs", "prune", "quick.yaml", "--older-than", "1s"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.starts_with(&format!("deleted {RUNS} finished run(s)")),
        "{said}"
    );
    assert_eq!(listed(dir.path()), 0);
    let after = on_disk(dir.path());
    eprintln!("{RUNS} finished runs: {before} bytes; after the prune: {after} bytes");
    assert!(
        after * 4 < before,
        "the store went from {before} to {after} bytes"
    );
}

#[test]
fn prune_needs_an_age_or_a_retention_and_a_valid_duration() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "quick.yaml", QUICK);
    let out = run(dir.path(), &["runs", "prune", "quick.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nothing to prune"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        dir.path(),
        &["runs", "prune", "quick.yaml", "--older-than", "soon"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--older-than"),
        "{}",
        text(&out.stderr)
    );
    let bad = QUICK.replace(
        "path: state/runs.db}",
        "path: state/runs.db, retention: {checkpoints: 0}}",
    );
    write(dir.path(), "bad.yaml", &bad);
    let out = run(dir.path(), &["runs", "prune", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("checkpoints"),
        "{}",
        text(&out.stderr)
    );
}
