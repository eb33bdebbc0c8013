//! The Magentic team through YAML and the `troupe` binary: the example's
//! ledgers as `--events jsonl`, a plan review answered in another process
//! (edited, then approved), a selector's `fallback`, and the config
//! errors a `magentic:` section can have, each at its place.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{jsonl, result_line, run, text, write};

use std::path::PathBuf;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/configs/magentic.yaml")
}

#[test]
fn the_example_reports_every_ledger_as_an_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = example();
    let cfg = cfg.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", cfg, "When did Rust 1.0 ship?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = jsonl(&out);
    let ledgers: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "ledger").collect();
    let kinds: Vec<&str> = ledgers.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["task", "progress", "progress", "progress"]);
    assert_eq!(ledgers[0]["path"], "magentic-team/manager");
    assert_eq!(
        ledgers[0]["ledger"]["plan"][0],
        "researcher looks up the release date"
    );
    // Small-model spelling: "Researcher" still picks the researcher.
    assert_eq!(ledgers[1]["ledger"]["next_speaker"]["answer"], "Researcher");
    let picked: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "selected")
        .filter_map(|e| e["next"][0].as_str())
        .collect();
    assert_eq!(picked, ["researcher", "writer"]);
    assert!(ledgers[3]["ledger"]["is_request_satisfied"]["answer"] == true);
    let result = result_line(&out);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["final_response"], "Rust 1.0 shipped on 15 May 2015.",
        "{result}"
    );
}

const REVIEWED: &str = "version: 1
models:
  m: {provider: scripted}
  boss:
    provider: scripted
    replies:
      - structured:
          facts_given: [a report is due]
          facts_to_look_up: []
          facts_to_derive: []
          educated_guesses: []
          plan: [analyst analyses, writer writes]
      - structured:
          is_request_satisfied: {reason: no, answer: false}
          is_in_loop: {reason: no, answer: false}
          is_progress_being_made: {reason: yes, answer: true}
          next_speaker: {reason: the plan, answer: 'Next: writer'}
          instruction_or_question: {reason: the plan, answer: Write the report.}
      - structured:
          is_request_satisfied: {reason: written, answer: true}
          is_in_loop: {reason: no, answer: false}
          is_progress_being_made: {reason: yes, answer: true}
          next_speaker: {reason: done, answer: ''}
          instruction_or_question: {reason: done, answer: ''}
      - The report is written.
agents:
  analyst: {model: m, description: Analyses., script: [numbers]}
  writer: {model: m, description: Writes., script: [a report]}
workflow:
  magentic:
    participants: [analyst, writer]
    model: boss
    plan_review: true
checkpoint: {store: sqlite, path: state/runs.db}
";

#[test]
fn a_plan_review_is_answered_in_another_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "reviewed.yaml", REVIEWED);
    let cfg = cfg.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "r",
            cfg,
            "write the report",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    let request = &result["requests"][0];
    assert_eq!(request["agent"], "manager", "{result}");
    let prompt = request["prompt"].as_str().expect("a prompt");
    assert!(
        prompt.contains("1. analyst analyses\n2. writer writes"),
        "{prompt}"
    );
    let id = request["id"].as_str().expect("an id").to_string();

    // The user keeps only the writer's step.
    let out = run(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=1. writer writes alone"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = jsonl(&out);
    let task = events
        .iter()
        .find(|e| e["type"] == "ledger" && e["kind"] == "task")
        .expect("the edited task ledger");
    assert_eq!(
        task["ledger"]["plan"],
        serde_json::json!(["writer writes alone"])
    );
    assert!(
        task["summary"]
            .as_str()
            .is_some_and(|s| s.contains("edited by the user"))
    );
    let result = result_line(&out);
    assert_eq!(
        result["final_response"], "The report is written.",
        "{result}"
    );
}

#[test]
fn magentic_and_selector_fallback_errors_are_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(
        dir.path(),
        "bad.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  manager: {model: m, script: [x]}
  b: {model: m, script: [y]}
workflow:
  magentic:
    participants: [manager, b]
    model: m
    max_stalls: 0
    fallback: sometimes
",
    );
    let out = run(dir.path(), &["validate", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.yaml:12:15: field `workflow.magentic.fallback`"),
        "{err}"
    );
    assert!(err.contains("round_robin"), "{err}");
    let fixed = std::fs::read_to_string(&bad)
        .expect("read")
        .replace("    fallback: sometimes\n", "    fallback: fail\n");
    std::fs::write(&bad, fixed).expect("write");
    let out = run(dir.path(), &["validate", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.yaml:9:20: field `workflow.magentic.participants[0]`: a Magentic team keeps the name `manager` for itself"),
        "{err}"
    );
    assert!(err.contains("field `workflow.magentic.model`: the Magentic manager's model `m` runs scripted but has no `replies`"), "{err}");
    assert!(
        err.contains("field `workflow.magentic.max_stalls`: must be at least 1"),
        "{err}"
    );
}

#[test]
fn a_selector_whose_model_cannot_pick_fails_when_told_to() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = |fallback: &str| {
        format!(
            "version: 1
models:
  m: {{provider: scripted}}
  picker: {{provider: scripted, when_exhausted: repeat_last, replies: [\"I'd rather not say\"]}}
agents:
  a: {{model: m, script: [from a]}}
  b: {{model: m, script: [from b]}}
workflow:
  selector:
    participants: [a, b]
    model: picker
    fallback: {fallback}
  max_turns: 1
"
        )
    };
    let cfg = write(dir.path(), "rr.yaml", &body("round_robin"));
    let out = run(
        dir.path(),
        &["run", "--quiet", cfg.to_str().expect("utf-8"), "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "from a");
    let cfg = write(dir.path(), "fail.yaml", &body("fail"));
    let out = run(
        dir.path(),
        &["run", "--quiet", cfg.to_str().expect("utf-8"), "go"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("named no valid speaker in 3 attempts"),
        "{err}"
    );
    assert!(err.contains("valid: a, b"), "{err}");
}
