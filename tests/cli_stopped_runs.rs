//! Stopped runs through the `troupe` binary: a preset team reports the
//! same status and turns with a checkpoint store as without one (under a
//! text mention and under a timeout), and `--resume` of a run that had
//! stopped on its condition hands its result back again without another
//! turn — the thread does not grow, no model is called.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{jsonl, result_line, run, text, write};

/// A round-robin team of two scripted agents under `stop`, each call
/// taking `delay`; with a sqlite store when `store`.
fn team(stop: &str, delay: &str, store: bool) -> String {
    let mut yaml = format!(
        "version: 1
models:
  m: {{provider: scripted, delay: {delay}, replies: [\"more\", \"more\", \"more APPROVE\"], when_exhausted: cycle}}
agents:
  writer: {{model: m}}
  critic: {{model: m}}
workflow:
  round_robin: {{participants: [writer, critic]}}
  {stop}
"
    );
    if store {
        yaml.push_str("checkpoint: {store: sqlite, path: state/runs.db}\n");
    }
    yaml
}

/// Status, detail, turns and final response of a `--events jsonl` run.
fn summary(out: &std::process::Output) -> (String, String, u64, String) {
    let r = result_line(out);
    (
        r["status"].as_str().unwrap_or_default().to_string(),
        r["detail"].as_str().unwrap_or_default().to_string(),
        r["turns"].as_u64().unwrap_or_default(),
        r["final_response"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_store_does_not_change_what_a_preset_run_reports() {
    let stops = [
        ("stop: {text_mention: APPROVE}\n  max_turns: 20", "1ms"),
        ("stop: {timeout: 1s}", "300ms"),
    ];
    for (stop, delay) in stops {
        let dir = tempfile::tempdir().expect("tempdir");
        let bare = write(dir.path(), "bare.yaml", &team(stop, delay, false));
        let stored = write(dir.path(), "stored.yaml", &team(stop, delay, true));
        let mut seen = Vec::new();
        for cfg in [&bare, &stored] {
            let cfg = cfg.to_str().expect("utf-8");
            let out = run(dir.path(), &["run", "--events", "jsonl", cfg, "go"]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            seen.push(summary(&out));
        }
        assert_eq!(seen[0].0, "stopped", "{stop}: {:?}", seen[0]);
        assert!(seen[0].2 > 1, "{stop}: {:?}", seen[0]);
        // A timeout cuts the run at a moment of its own, so only the
        // status is compared for it; a text mention ends at the same turn.
        if stop.contains("timeout") {
            assert_eq!(seen[1].0, seen[0].0, "{stop}");
            assert!(seen[1].1.starts_with("timeout"), "{:?}", seen[1]);
        } else {
            assert_eq!(seen[1], seen[0], "{stop}");
        }
    }
}

#[test]
fn resuming_a_run_that_stopped_runs_no_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "t.yaml", &team("max_turns: 5", "0ms", true));
    let cfg = cfg.to_str().expect("utf-8");
    let first = run(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r", cfg, "go"],
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let whole = summary(&first);
    assert_eq!(whole.0, "stopped");
    assert_eq!(whole.2, 5);
    let calls =
        |out: &std::process::Output| result_line(out)["stats"]["total"]["model_calls"].clone();
    for _ in 0..3 {
        let out = run(
            dir.path(),
            &["run", "--events", "jsonl", "--resume", "r", cfg],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(summary(&out), whole);
        assert_eq!(calls(&out), calls(&first), "no model call was made");
        let started = jsonl(&out)
            .iter()
            .filter(|e| e["type"] == "agent_started")
            .count();
        assert_eq!(started, 0, "no turn started");
    }
    let thread = common::final_thread(std::path::Path::new(cfg), "r");
    assert_eq!(thread.len(), 6, "the task and five turns, no more");
}
