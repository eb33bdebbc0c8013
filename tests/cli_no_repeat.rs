//! Nothing finished is done twice (issue 35, item 4), through the `troupe`
//! binary: a map-reduce interrupted after half its workers finished —
//! by Ctrl-C, and by `kill -9` — asks only the other half on resume, and
//! a nested team interrupted and resumed spends exactly what the
//! uninterrupted run spent, a parallel branch that finished before its
//! sibling is kept; and a planner's plan (item 5) is in the store
//! from the first checkpoint on, and a resume carries it on without asking
//! the planner again or running a finished step twice.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{jsonl, lines, result_line, run, text, troupe, until, wait, write};

use std::process::{Child, Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Eight sub-tasks, four workers at once, each taking `delay`.
fn map_reduce(delay: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
  slow: {{provider: scripted, delay: {delay}, when_exhausted: cycle, replies: [\"worked\"]}}
agents:
  mapper: {{model: m, script: [\"[\\\"p1\\\", \\\"p2\\\", \\\"p3\\\", \\\"p4\\\", \\\"p5\\\", \\\"p6\\\", \\\"p7\\\", \\\"p8\\\"]\"]}}
  worker: {{model: slow}}
  reducer: {{model: m, script: [\"all eight combined\"]}}
workflow:
  map_reduce: {{mapper: mapper, worker: worker, reducer: reducer, max_concurrency: 4}}
checkpoint: {{store: sqlite, path: state/runs.db}}
"
    )
}

/// A team of two taking four turns, as the first of two steps.
const NESTED: &str = "version: 1
models:
  m: {provider: scripted, delay: 700ms, when_exhausted: cycle}
agents:
  a: {model: m, script: [\"a one\", \"a two\"]}
  b: {model: m, script: [\"b one\", \"b two\"]}
  c: {model: m, script: [\"c sums up\"]}
workflows:
  team:
    round_robin: {participants: [a, b]}
    max_turns: 4
workflow:
  steps: [{workflow: team}, {agent: c}]
checkpoint: {store: sqlite, path: state/runs.db}
";

/// A block of two steps side by side, one quick and one slow, then a
/// third reading both.
const PARALLEL: &str = "version: 1
models:
  fast: {provider: scripted, delay: 200ms}
  slow: {provider: scripted, delay: 2s}
agents:
  quick: {model: fast, script: [\"quick done\"]}
  long: {model: slow, script: [\"long done\"]}
  last: {model: fast, script: [\"both read\"]}
workflow:
  steps:
    - id: block
      steps: [{agent: quick}, {agent: long}]
    - agent: last
checkpoint: {store: sqlite, path: state/runs.db}
";

/// A planner's plan of three steps in a row, each taking 700 ms.
const PLANNED: &str = "version: 1
models:
  m: {provider: scripted, delay: 700ms}
  planning: {provider: scripted, replies: [\"STEPS:\\nONE [a]: first\\nTWO [b]: second\\nTHREE [c]: third\\nGRAPH:\\nONE -> TWO -> THREE\"]}
agents:
  a: {model: m, script: [\"one done\"]}
  b: {model: m, script: [\"two done\"]}
  c: {model: m, script: [\"three done\"]}
workflow:
  plan:
    planner: {model: planning, agents: [a, b, c]}
checkpoint: {store: sqlite, path: state/runs.db}
";

/// Sends `signal` (`INT`, `TERM`) to the child.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// The model calls of a `--events jsonl` run whose path contains `part`.
fn model_calls(out: &Output, part: &str) -> usize {
    jsonl(out)
        .iter()
        .filter(|e| e["type"] == "model_call_finished")
        .filter(|e| e["path"].as_str().is_some_and(|p| p.contains(part)))
        .count()
}

/// The same, over lines already read.
fn model_calls_in(seen: &[String], part: &str) -> usize {
    seen.iter()
        .filter(|l| l.contains("\"model_call_finished\"") && l.contains(part))
        .count()
}

/// Reads lines until `done` holds over all read so far; all of them.
fn until_all(rx: &mpsc::Receiver<String>, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            seen.push(l);
            if done(&seen) {
                return seen;
            }
        }
    }
    panic!("never got there in:\n{}", seen.join("\n"));
}

/// How many lines of `seen` are events of `kind` whose line contains `part`.
fn count(seen: &[String], kind: &str, part: &str) -> usize {
    let kind = format!("\"type\":\"{kind}\"");
    seen.iter()
        .filter(|l| l.contains(&kind) && l.contains(part))
        .count()
}

/// The whole run: its result line.
fn whole(dir: &std::path::Path, cfg: &str) -> serde_json::Value {
    let out = run(
        dir,
        &["run", "--events", "jsonl", "--run-id", "whole", cfg, "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    result_line(&out)
}

/// Resumes `id` to its end: the output, its result checked completed.
fn resume(dir: &std::path::Path, cfg: &str, id: &str) -> Output {
    let out = run(dir, &["run", "--events", "jsonl", "--resume", id, cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(result_line(&out)["status"], "completed");
    out
}

#[cfg(unix)]
#[test]
fn a_map_reduce_stopped_by_ctrl_c_asks_only_the_workers_that_had_not_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "mr.yaml", &map_reduce("1500ms"));
    let cfg = cfg.to_str().expect("utf-8");
    let whole = whole(dir.path(), cfg);
    assert_eq!(whole["stats"]["total"]["model_calls"], 10, "{whole}");

    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    // The first four workers are under way (four at once): Ctrl-C lets
    // them finish and starts no other.
    let mut seen = until_all(&stdout, |seen| count(seen, "agent_started", "worker#") == 4);
    signal(&child, "INT");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    seen.extend(stdout.try_iter());
    assert_eq!(model_calls_in(&seen, "worker#"), 4, "{}", seen.join("\n"));

    let out = resume(dir.path(), cfg, "r");
    assert_eq!(model_calls(&out, "worker#"), 4, "{}", text(&out.stdout));
    let result = result_line(&out);
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");
}

#[cfg(unix)]
#[test]
fn a_map_reduce_killed_after_half_its_workers_asks_only_the_other_half() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "mr.yaml", &map_reduce("1500ms"));
    let cfg = cfg.to_str().expect("utf-8");
    let whole = whole(dir.path(), cfg);

    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "k", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    // Four workers finished, and the checkpoint after the fourth saved (one
    // after the mapper's step, one for each worker as it finished); the
    // other four are under way for another second and a half.
    until_all(&stdout, |seen| {
        count(seen, "agent_finished", "worker#") == 4 && count(seen, "checkpoint_saved", "") >= 5
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let out = resume(dir.path(), cfg, "k");
    assert_eq!(model_calls(&out, "worker#"), 4, "{}", text(&out.stdout));
    let result = result_line(&out);
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");
}

#[cfg(unix)]
#[test]
fn a_nested_team_interrupted_and_resumed_spends_what_the_whole_run_spent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "nested.yaml", NESTED);
    let cfg = cfg.to_str().expect("utf-8");
    let whole = whole(dir.path(), cfg);
    assert_eq!(whole["stats"]["total"]["model_calls"], 5, "{whole}");

    // Ctrl-C in the team's second turn: it finishes, and the team goes on
    // from there on resume.
    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "c", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    until(&stdout, &["\"agent_started\"", "team/b"]);
    signal(&child, "INT");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let out = resume(dir.path(), cfg, "c");
    let result = result_line(&out);
    assert_eq!(model_calls(&out, "team/"), 2, "{}", text(&out.stdout));
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");

    // kill -9 in the team's third turn, its second saved: the third is
    // asked again, the first two are not.
    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "k", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    until_all(&stdout, |seen| {
        count(seen, "agent_finished", "team/") == 2 && count(seen, "checkpoint_saved", "") >= 2
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let out = resume(dir.path(), cfg, "k");
    let result = result_line(&out);
    assert_eq!(model_calls(&out, "team/"), 2, "{}", text(&out.stdout));
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");
}

/// The steps of a plan a `--events jsonl` run started, in order.
fn steps_started(out: &Output) -> Vec<String> {
    jsonl(out)
        .iter()
        .filter(|e| e["type"] == "agent_started")
        .filter_map(|e| e["path"].as_str())
        .filter_map(|p| p.rsplit('/').next())
        .filter(|step| ["ONE", "TWO", "THREE"].contains(step))
        .map(String::from)
        .collect()
}

/// The planner's model calls, as a result's stats count them.
fn planner_calls(result: &serde_json::Value) -> u64 {
    result["stats"]["agents"]
        .as_object()
        .expect("stats by agent")
        .iter()
        .filter(|(path, _)| path.ends_with("/planner"))
        .filter_map(|(_, s)| s["model_calls"].as_u64())
        .sum()
}

#[cfg(unix)]
#[test]
fn a_planners_plan_is_kept_from_the_first_checkpoint_and_resumed_without_asking_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "plan.yaml", PLANNED);
    let cfg = cfg.to_str().expect("utf-8");
    let whole = whole(dir.path(), cfg);
    assert_eq!(planner_calls(&whole), 1, "{whole}");

    // kill -9 during the first step: the plan is in the store already.
    let start = |id: &str| {
        let mut child = troupe(
            dir.path(),
            &["run", "--events", "jsonl", "--run-id", id, cfg, "go"],
        )
        .spawn()
        .expect("start");
        let stdout = lines(child.stdout.take().expect("stdout"));
        (child, stdout)
    };
    let (mut child, stdout) = start("first");
    until_all(&stdout, |seen| {
        count(seen, "agent_started", "/ONE") == 1 && count(seen, "checkpoint_saved", "") >= 1
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let listed = common::run_listed(dir.path(), cfg, "first");
    assert_eq!(listed["status"], "unfinished", "{listed}");
    let out = resume(dir.path(), cfg, "first");
    assert_eq!(steps_started(&out), ["ONE", "TWO", "THREE"]);
    let result = result_line(&out);
    assert_eq!(planner_calls(&result), 1, "{result}");
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");

    // kill -9 during the second step, the first saved: the first is not
    // run again.
    let (mut child, stdout) = start("second");
    until_all(&stdout, |seen| {
        count(seen, "agent_finished", "/ONE") == 1 && count(seen, "checkpoint_saved", "") >= 2
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let out = resume(dir.path(), cfg, "second");
    assert_eq!(steps_started(&out), ["TWO", "THREE"]);
    let result = result_line(&out);
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");

    // Ctrl-C during the second step: it finishes, and only the third runs
    // on resume.
    let (child, stdout) = start("third");
    until(&stdout, &["\"agent_started\"", "/TWO"]);
    signal(&child, "INT");
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let out = resume(dir.path(), cfg, "third");
    assert_eq!(steps_started(&out), ["THREE"]);
    let result = result_line(&out);
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");
}

/// The agents a `--events jsonl` run started, by the last part of their
/// path.
fn started(out: &Output) -> Vec<String> {
    jsonl(out)
        .iter()
        .filter(|e| e["type"] == "agent_started")
        .filter_map(|e| e["path"].as_str())
        .filter_map(|p| p.rsplit('/').next())
        .map(String::from)
        .collect()
}

#[cfg(unix)]
#[test]
fn a_parallel_branch_that_finished_before_a_kill_is_not_run_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "parallel.yaml", PARALLEL);
    let cfg = cfg.to_str().expect("utf-8");
    let whole = whole(dir.path(), cfg);

    let mut child = troupe(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "k", cfg, "go"],
    )
    .spawn()
    .expect("start");
    let stdout = lines(child.stdout.take().expect("stdout"));
    // The quick branch finished and its reply was saved; the slow one is
    // still under way.
    let seen = until_all(&stdout, |seen| {
        count(seen, "agent_finished", "/quick") == 1 && count(seen, "checkpoint_saved", "") >= 1
    });
    assert_eq!(
        count(&seen, "agent_finished", "/long"),
        0,
        "{}",
        seen.join("\n")
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let out = resume(dir.path(), cfg, "k");
    assert_eq!(started(&out), ["long", "last"], "{}", text(&out.stdout));
    let result = result_line(&out);
    assert_eq!(result["final_response"], whole["final_response"]);
    assert_eq!(result["stats"], whole["stats"], "{result}");
    // The same thread as the whole run's, message for message.
    let lines = |t: &troupe::Thread| -> Vec<(String, String)> {
        t.messages()
            .iter()
            .map(|m| (m.source.to_string(), m.text_content().into_owned()))
            .collect()
    };
    let path = dir.path().join("parallel.yaml");
    assert_eq!(
        lines(&common::final_thread(&path, "k")),
        lines(&common::final_thread(&path, "whole"))
    );
}
