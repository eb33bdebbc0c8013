//! `--events jsonl` is a stable format: `schema/events.schema.json` is the
//! schema `troupe schema --events` prints, and every line troupe writes —
//! of a completed, a nested, a failed and a waiting run — is valid under it,
//! carries the run's id, a sequence number and a time, and writes message
//! ids as strings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use common::{run, text, write};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn committed() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("schema/events.schema.json"))
        .expect("schema/events.schema.json");
    serde_json::from_str(&text).expect("the committed schema is JSON")
}

/// Runs `args` and checks every stdout line against the schema; the lines.
fn lines_of(dir: &Path, args: &[&str], code: i32) -> Vec<serde_json::Value> {
    let out = run(dir, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        text(&out.stderr)
    );
    let schema = committed();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(!lines.is_empty(), "{args:?}: no lines");
    for line in &lines {
        let errors: Vec<String> = validator
            .iter_errors(line)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{args:?}: a line the schema refuses:\n{line}\n{}",
            errors.join("\n")
        );
    }
    lines
}

/// The event lines (all but the last, which ends the run).
fn events(lines: &[serde_json::Value]) -> &[serde_json::Value] {
    &lines[..lines.len() - 1]
}

#[test]
fn the_committed_event_schema_is_the_generated_one() {
    let out = run(&root(), &["schema", "--events"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let generated: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        generated,
        committed(),
        "schema/events.schema.json is stale: run `cargo run -- schema --events > schema/events.schema.json`"
    );
}

#[test]
fn every_line_of_a_run_is_valid_stamped_and_in_sequence() {
    let lines = lines_of(
        &root(),
        &[
            "run",
            "--events",
            "jsonl",
            "examples/configs/nested.yaml",
            "a task",
        ],
        0,
    );
    let events = events(&lines);
    let run_id = events[0]["run_id"].as_str().expect("a run id").to_string();
    assert!(!run_id.is_empty());
    let mut seqs = HashSet::new();
    for e in events {
        assert_eq!(
            e["run_id"],
            run_id.as_str(),
            "one run id for nested runs too: {e}"
        );
        assert!(
            seqs.insert(e["seq"].as_u64().expect("a number")),
            "seq twice: {e}"
        );
        let time = e["time"].as_str().expect("a time");
        assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    }
    // Numbers 0..n, each once (they may be written slightly out of order).
    assert_eq!(seqs, (0..events.len() as u64).collect::<HashSet<_>>());
    // Events of the nested workflow say so in their paths.
    assert!(events.iter().any(|e| {
        e["path"]
            .as_str()
            .is_some_and(|p| p.matches('/').count() >= 2)
    }));
    // Message ids are strings of hex digits, never numbers.
    let ids: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "message_delivered")
        .map(|e| &e["message"])
        .collect();
    assert!(!ids.is_empty());
    assert!(
        ids.iter()
            .all(|id| id.as_str().is_some_and(|s| s.len() == 32)),
        "{ids:?}"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "result");
    assert_eq!(end["status"], "completed");
    // The schema is strict enough to refuse what jq would misread.
    let validator = jsonschema::validator_for(&committed()).unwrap();
    let mut numeric = ids_line(events).clone();
    numeric["message"] = serde_json::json!(1u64 << 60);
    assert!(!validator.is_valid(&numeric), "{numeric}");
    let mut unknown = end.clone();
    unknown["status"] = "finished-ish".into();
    assert!(!validator.is_valid(&unknown), "{unknown}");
    let mut unstamped = ids_line(events).clone();
    unstamped.as_object_mut().unwrap().remove("seq");
    assert!(!validator.is_valid(&unstamped), "{unstamped}");
    let finished = events.iter().rev().find(|e| e["type"] == "run_finished");
    assert_eq!(finished.expect("run_finished")["status"], "completed");
}

fn ids_line(events: &[serde_json::Value]) -> &serde_json::Value {
    events
        .iter()
        .find(|e| e["type"] == "message_delivered")
        .expect("a delivery")
}

#[test]
fn a_failed_and_a_waiting_run_end_with_valid_lines() {
    let dir = tempfile::tempdir().unwrap();
    let failing = write(
        dir.path(),
        "failing.yaml",
        "version: 1\nmodels: {m: {provider: scripted}}\nagents:\n  a: {model: m, script: [one]}\nworkflow:\n  steps: [{agent: a}, {id: again, agent: a}]\n",
    );
    let lines = lines_of(
        dir.path(),
        &["run", "--events", "jsonl", failing.to_str().unwrap(), "go"],
        1,
    );
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "error", "{end}");
    let finished = events(&lines)
        .iter()
        .find(|e| e["type"] == "run_finished")
        .expect("run_finished");
    assert_eq!(finished["status"], "failed");
    assert!(finished["detail"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(events(&lines).iter().any(|e| e["type"] == "agent_failed"));
    assert!(end["stats"]["total"]["turns"].is_u64(), "{end}");

    // A copy: the example keeps its store next to itself.
    let hitl = dir.path().join("human_in_the_loop.yaml");
    std::fs::copy(
        root().join("examples/configs/human_in_the_loop.yaml"),
        &hitl,
    )
    .unwrap();
    let lines = lines_of(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            "--no-input",
            hitl.to_str().unwrap(),
            "Plan the launch",
        ],
        3,
    );
    let end = lines.last().unwrap();
    assert_eq!(end["status"], "waiting_for_input", "{end}");
    assert!(!end["requests"].as_array().expect("requests").is_empty());
}
