//! `troupe validate` and `troupe run` on stop expressions and retries:
//! a bad expression or pattern exits 2 with FILE:LINE:COL inside it; the
//! parallel-retry example shows the block's retry in its events.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Output;

/// `troupe args` run from the crate's root, offline (see `common::run`).
fn troupe(args: &[&str]) -> Output {
    common::run(&PathBuf::from(env!("CARGO_MANIFEST_DIR")), args)
}

#[test]
fn validate_locates_errors_inside_stop_expressions_and_retry_patterns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
workflow:
  steps:
    - id: par
      retry: {max_attempts: 1, on: [{pattern: \"429|(rate\"}]}
      steps: [{agent: a}]
  stop: max_turns(3) | text_mention(DONE from a) & nope
",
    )
    .expect("write");
    let out = troupe(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml:9:47: field `workflow.steps[0].retry.on[0].pattern`: invalid regular expression"),
        "{err}"
    );
    assert!(
        err.contains(
            "bad.yaml:11:52: field `workflow.stop`: stop expression: unknown stop condition `nope`"
        ),
        "{err}"
    );
}

#[test]
fn the_parallel_retry_example_shows_the_blocks_retry() {
    let out = troupe(&[
        "run",
        "--events",
        "jsonl",
        "examples/configs/parallel_retry.yaml",
        "compare",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = String::from_utf8_lossy(&out.stdout);
    let retry = events
        .lines()
        .find(|l| l.contains("\"retry\"") || l.contains("\"Retry\""))
        .unwrap_or_else(|| panic!("no retry event:\n{events}"));
    assert!(retry.contains("gather"), "{retry}");
    assert!(retry.contains("\"attempt\":1"), "{retry}");
}

#[test]
fn the_graph_draws_a_retried_block_as_one_node_naming_its_steps() {
    let out = troupe(&["graph", "examples/configs/parallel_retry.yaml"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chart = String::from_utf8_lossy(&out.stdout);
    assert!(
        chart.contains("n_gather[\"gather: parallel specs + pricing, retried whole\"]"),
        "{chart}"
    );
    assert!(chart.contains("n_gather --> n_writer"), "{chart}");
}
