//! `max_history` through a config and `troupe run`: a long chat, as a
//! preset team and as a router-only workflow, shows its agents only the
//! history it keeps; a limit of 0 is refused where it is written.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{text, wait, write};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    wait(
        common::troupe(&root(), args).spawn().expect("start troupe"),
        Duration::from_secs(60),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Two agents trading 100-word answers, with `workflow` (which holds
/// `{history}` where the limit goes).
fn config(workflow: &str, history: &str) -> String {
    let long = "word ".repeat(100);
    format!(
        "version: 1\nmodels:\n  m: {{provider: scripted, replies: [\"{long}\"], when_exhausted: cycle}}\nagents:\n  a: {{model: m}}\n  b: {{model: m}}\nworkflow:\n{}",
        workflow.replace("{history}", history)
    )
}

/// The last prompt of the run of `workflow` without a limit and with
/// `max_history: 4`, both run through `troupe run`.
fn shown(dir: &Path, name: &str, workflow: &str) -> (u64, u64) {
    let mut shown = Vec::new();
    for (tag, history) in [("all", ""), ("kept", "  max_history: 4\n")] {
        let file = write(
            dir,
            &format!("{name}-{tag}.yaml"),
            &config(workflow, history),
        );
        let out = run(&["run", "--events", "jsonl", path(&file), "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        shown.push(common::last_prompt_tokens(&out));
    }
    (shown[0], shown[1])
}

#[test]
fn a_kept_history_bounds_what_a_long_preset_chat_shows_its_agents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (all, kept) = shown(
        dir.path(),
        "round-robin",
        "  round_robin: {participants: [a, b]}\n  max_turns: 40\n{history}",
    );
    assert!(all > 4_000, "the whole chat: {all} tokens");
    // At most 5 messages of ~100 tokens (4, a quarter more while the run
    // goes on) and the instructions.
    assert!(kept < 700, "the kept history: {kept} tokens");
}

#[test]
fn a_kept_history_bounds_a_router_only_run_with_a_checkpoint_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let router = "  router:\n    routes:\n      - {from: user, to: a}\n      - {from: a, to: b}\n      - {from: b, to: a}\n  stop: {max_messages: 40}\n{history}";
    let (all, kept) = shown(dir.path(), "router", router);
    assert!(all > 2_000, "the whole run: {all} tokens");
    assert!(kept < 700, "the kept history: {kept} tokens");
    // Checkpointed every delivery into a file store, it runs the same.
    let with_store = format!(
        "{}checkpoint: {{store: dir, path: {}, every: 1}}\n",
        config(router, "  max_history: 4\n"),
        path(&dir.path().join("state"))
    );
    let file = write(dir.path(), "stored.yaml", &with_store);
    let out = run(&["run", "--events", "jsonl", path(&file), "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(common::last_prompt_tokens(&out) < 700);
}

#[test]
fn a_history_of_nothing_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "zero.yaml",
        &config(
            "  round_robin: {participants: [a, b]}\n{history}",
            "  max_history: 0\n",
        ),
    );
    let out = run(&["validate", path(&file)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("zero.yaml:8:") && err.contains("workflow.max_history"),
        "{err}"
    );
}
