//! `troupe run` reports what a run spent: a summary line after the run
//! (a failed one too), and per agent and in total on the `run_finished`
//! and result lines of `--events jsonl`; a budget in `stop:` ends the run
//! as stopped, naming the budget.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// `troupe args` run from the crate's root, offline (see `common::run`).
fn troupe(args: &[&str]) -> Output {
    common::run(&PathBuf::from(env!("CARGO_MANIFEST_DIR")), args)
}

/// A priced writer that calls the calculator twice and then meets `last`.
fn config(dir: &Path, stop: &str, last: &str) -> PathBuf {
    let path = dir.join("team.yaml");
    std::fs::write(
        &path,
        format!(
            r#"version: 1
models:
  m:
    provider: scripted
    pricing: {{input: 1.0, output: 2.0}}
agents:
  writer:
    model: m
    tools: [calculator]
    script:
      - tool_call: {{name: calculator, arguments: {{expression: "1 + 2"}}}}
      - tool_call: {{name: calculator, arguments: {{expression: "2 + 2"}}}}
      - {last}
      - four
workflow:
  round_robin: {{participants: [writer]}}
  stop: {stop}
  max_turns: 5
"#
        ),
    )
    .expect("write config");
    path
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_run_failing_after_two_model_calls_reports_them_in_the_summary_and_the_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(
        dir.path(),
        "{max_turns: 3}",
        "{error: the server went away}",
    );
    let file = file.to_str().expect("utf-8 path");

    let out = troupe(&["run", file, "add things"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run failed: "), "{err}");
    let spent = err
        .lines()
        .find(|l| l.starts_with("spent: "))
        .unwrap_or_else(|| panic!("no summary line: {err}"));
    assert!(
        spent.starts_with("spent: 1 turn, 2 model calls, 2 tool calls, "),
        "{spent}"
    );
    assert!(
        spent.contains(" tokens in / ") && spent.contains(", $0.0"),
        "{spent}"
    );

    let out = troupe(&["run", "--events", "jsonl", file, "add things"]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    let finished = lines
        .iter()
        .find(|l| l["type"] == "run_finished")
        .expect("a run_finished line");
    assert_eq!(finished["status"], "failed");
    let total = &finished["stats"]["total"];
    assert_eq!(total["model_calls"], 2, "{finished}");
    assert_eq!(total["tool_calls"], 2);
    assert!(total["input_tokens"].as_u64().unwrap() > 0);
    assert!(total["cost"].as_f64().unwrap() > 0.0);
    let writer = &finished["stats"]["agents"]["workflow/writer"];
    assert_eq!(writer["model_calls"], 2, "{finished}");
    let error = lines
        .iter()
        .find(|l| l["type"] == "error")
        .expect("error line");
    assert_eq!(error["stats"]["total"], *total);
    let failed = lines
        .iter()
        .find(|l| l["type"] == "agent_failed")
        .expect("an agent_failed line");
    assert_eq!(failed["path"], "workflow/writer");
    let tool_ends = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_finished")
        .count();
    assert_eq!(tool_ends, 2);
}

#[test]
fn a_budget_stops_the_run_naming_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(dir.path(), "\"max_tool_calls(2)\"", "three");
    let out = troupe(&[
        "run",
        "--events",
        "jsonl",
        file.to_str().expect("utf-8 path"),
        "add things",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    let result = lines
        .iter()
        .find(|l| l["type"] == "result")
        .expect("result");
    assert_eq!(result["status"], "stopped", "{result}");
    assert!(
        result["detail"]
            .as_str()
            .unwrap()
            .contains("max_tool_calls(2): budget: 2 tool calls ≥ 2"),
        "{result}"
    );
    assert_eq!(result["stats"]["total"]["tool_calls"], 2);
}
