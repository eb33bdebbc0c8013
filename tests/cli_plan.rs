//! Planning workflows, agents as tools and context policies from YAML, as
//! a user meets them through the `troupe` binary: `validate` locates
//! mistakes inside a plan's text and refuses agents that call themselves
//! (exit 2); a planner, stop flags and aborts run offline.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

mod common;
use common::wait;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

/// The preamble of every config here: a scripted model and three agents.
const AGENTS: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  barista: {model: m, script: [A grande oat-milk latte.]}
  starbucks: {model: m, script: [Ordered the latte at Starbucks.]}
  mcdonalds: {model: m, script: [\"Ordered a McChicken meal at McDonald's.\"]}
";

/// Runs `troupe ARGS` offline.
fn run(args: &[&str]) -> Output {
    let child = Command::new(TROUPE)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start troupe");
    wait(child, Duration::from_secs(30))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `yaml` as `name` in `dir`.
fn config(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, yaml).expect("write config");
    path
}

#[test]
fn validate_locates_a_plan_error_at_its_line_and_column_in_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = config(
        dir.path(),
        "bad.yaml",
        &format!(
            "{AGENTS}workflow:\n  plan:\n    text: |\n      barista -> starbucks\n      mcdonalds, -> starbucks\n"
        ),
    );
    let out = run(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    // Plan line 2 is file line 12 (the `|` is on line 10); position 1's
    // empty alternative starts at column 7.
    assert!(
        err.contains(
            "bad.yaml:12:7: field `workflow.plan.text`: the plan text: line 2: position 1 of the path has an empty step id"
        ),
        "{err}"
    );

    let unknown = config(
        dir.path(),
        "unknown.yaml",
        &format!("{AGENTS}workflow:\n  plan:\n    text: barista -> waiter\n"),
    );
    let out = run(&["validate", unknown.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown.yaml:10:22: field `workflow.plan.text`: the plan text: line 1: `waiter` is neither a step of `steps` nor an agent"),
        "{err}"
    );
}

#[test]
fn validate_refuses_an_agent_that_is_its_own_tool_through_a_cycle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = config(
        dir.path(),
        "cycle.yaml",
        "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  lead: {model: m, tools: [{agent: helper}]}
  helper: {model: m, tools: [{agent: lead, description: Ask the lead}]}
workflow: {sequential: {participants: [lead]}}
",
    );
    let out = run(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cycle.yaml:6:38: field `agents.helper.tools[0].agent`: agent `helper` calls itself through its tools (helper -> lead -> helper)"),
        "{err}"
    );
}

#[test]
fn a_planner_writes_the_seed_plan_and_its_steps_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = "STEPS:\\nSUGGEST_RECIPE_STARBUCKS [barista]: Search for a Starbucks recipe\\nORDER_STARBUCKS [starbucks]: Order from Starbucks\\nORDER_MCDONALDS [mcdonalds]: Order from McDonald's\\nGRAPH:\\nSUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS\\nORDER_MCDONALDS";
    let cfg = config(
        dir.path(),
        "planner.yaml",
        &format!(
            "{AGENTS}workflow:\n  plan:\n    planner:\n      model: m\n      agents: [barista, starbucks, mcdonalds]\n      script: [\"{plan}\"]\n"
        ),
    );
    let path = cfg.to_str().expect("utf-8 path");
    let out = run(&["validate", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["run", path, "a drink and lunch"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The planner's steps run under it, each by the agent the plan names.
    for said in [
        "● planner/workflow/SUGGEST_RECIPE_STARBUCKS",
        "● planner/workflow/ORDER_STARBUCKS",
        "A grande oat-milk latte.",
        "Ordered the latte at Starbucks.",
        "Ordered a McChicken meal at McDonald's.",
    ] {
        assert!(stdout.contains(said), "missing {said:?}:\n{stdout}");
    }
}

#[test]
fn a_stop_flag_ends_the_plan_early_and_an_abort_fails_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The barista says the drink is already ordered: the plan stops
    // before ORDER_STARBUCKS.
    let stop = config(
        dir.path(),
        "stop.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  barista: {model: m, script: [ALREADY ORDERED a latte]}
  starbucks: {model: m, script: [Ordered the latte at Starbucks.]}
workflow:
  plan:
    text: barista -> starbucks
    flags: {stop: ALREADY ORDERED, abort: CLOSED}
",
    );
    let out = run(&["run", stop.to_str().expect("utf-8 path"), "a drink"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ALREADY ORDERED a latte"), "{stdout}");
    assert!(!stdout.contains("Ordered the latte"), "{stdout}");

    let abort = config(
        dir.path(),
        "abort.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  barista: {model: m, script: [The shop is CLOSED]}
  starbucks: {model: m, script: [Ordered the latte at Starbucks.]}
workflow:
  plan:
    groups: [[barista], [starbucks]]
    flags: {abort: CLOSED}
",
    );
    let out = run(&["run", abort.to_str().expect("utf-8 path"), "a drink"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("plan aborted: The shop is CLOSED"), "{all}");
    assert!(!all.contains("Ordered the latte"), "{all}");
}

#[test]
fn graph_draws_a_text_plan_with_its_steps_and_agents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(
        dir.path(),
        "plan.yaml",
        &format!(
            "{AGENTS}workflow:\n  plan:\n    text: |\n      RECIPE -> starbucks\n      mcdonalds\n    steps:\n      RECIPE: {{agent: barista, request: Suggest a drink}}\n"
        ),
    );
    let out = run(&["graph", cfg.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chart = text(&out.stdout);
    for line in [
        "n_RECIPE[\"RECIPE: barista\"]",
        "n_user --> n_RECIPE",
        "n_user --> n_mcdonalds",
        "n_RECIPE --> n_starbucks",
    ] {
        assert!(chart.contains(line), "missing {line:?}:\n{chart}");
    }
}
