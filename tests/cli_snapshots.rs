//! The console output of every example config, as a person sees it
//! (`troupe run FILE TASK`, offline, no terminal), kept as insta snapshots
//! in `tests/snapshots/`, so a change to what troupe prints shows in
//! review. Times, ids and the temporary directory are masked; where
//! parallel agents interleave (their order varies from run to run) the
//! lines are sorted. Each run's footer counts the turns `spent:` counts.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --test
//! cli_snapshots`, then review the diff of `tests/snapshots/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::{run, text};
use regex::Regex;

/// Examples whose agents run side by side: their lines come in varying
/// order, so the snapshot holds them sorted.
const PARALLEL: &[&str] = &[
    "map_reduce",
    "newsroom",
    "parallel_retry",
    "planning",
    "reasoner",
    "router_pipeline",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The output with what changes from run to run masked.
fn normalise(out: &str, dir: &str) -> String {
    let out = out.replace(dir, "<dir>");
    let rules = [
        // Times: `12ms`, `1.0s`.
        (r"\b\d+(\.\d+)?(ms|s)\b", "<time>"),
        // Checkpoint and message ids.
        (r"\b[0-9a-f]{32}\b", "<id>"),
        // Request ids: `clerk-dafecc000002`.
        (r"\b([a-z_]+)-[0-9a-f]{6}0{4}\d{2}\b", "$1-<id>"),
        // Run ids made from the time: `pipeline-1796538624716`.
        (r"-\d{13}\b", "-<id>"),
    ];
    let mut out = out.to_string();
    for (pattern, with) in rules {
        out = Regex::new(pattern)
            .unwrap()
            .replace_all(&out, with)
            .into_owned();
    }
    out
}

/// The turns a line says: `… · 7 turns · …` or `spent: 7 turns, …`.
fn turns(line: &str) -> Option<u64> {
    let at = line.find(" turn")?;
    line[..at].rsplit([' ', '·']).next()?.trim().parse().ok()
}

#[test]
fn every_example_config_prints_as_its_snapshot() {
    let examples = root().join("examples/configs");
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    let digits = Regex::new(r"\d+").unwrap();
    for file in &files {
        // A copy of the examples per example (one nests another): a store
        // one keeps lands there, fresh.
        let dir = tempfile::tempdir().unwrap();
        for f in &files {
            std::fs::copy(examples.join(f), dir.path().join(f)).unwrap();
        }
        let file = file.as_str();
        let out = run(dir.path(), &["run", "--no-input", file, "a task"]);
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);

        // One definition of a turn: the footer's count is `spent:`'s.
        let footer = stdout.lines().find(|l| l.starts_with("■ "));
        let spent = stderr.lines().find(|l| l.starts_with("spent: "));
        let (footer, spent) = match (footer, spent) {
            (Some(f), Some(s)) => (f, s),
            _ => panic!("{file}: no footer or no `spent:` line\n{stdout}\n{stderr}"),
        };
        assert_eq!(turns(footer), turns(spent), "{file}: {footer} / {spent}");
        assert!(turns(footer).is_some(), "{file}: {footer}");
        assert!(!footer.contains(" 1 turns"), "{file}: {footer}");

        let name = file.trim_end_matches(".yaml");
        let dir = dir.path().to_str().unwrap();
        let mut shown = format!(
            "exit code {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            out.status.code(),
            normalise(&stdout, dir),
            normalise(&stderr, dir)
        );
        if PARALLEL.contains(&name) {
            // Who spoke is named once or twice, with its time and tokens
            // after its text or in its heading, as the turns interleave:
            // each speaker and line is kept once, without them.
            // How much a run spent varies too: a sibling cancelled by a
            // failure (parallel_retry) may or may not have finished its
            // turn. Counts in the totals are masked (the footer still
            // equals `spent:`, checked above).
            let mut lines: Vec<String> = shown
                .lines()
                .filter(|l| !l.starts_with("  · "))
                .map(|l| match l.strip_prefix("● ") {
                    Some(_) => l.split(" · ").next().unwrap_or(l).to_string(),
                    None if ["spent: ", "■ ", "◆ "].iter().any(|p| l.starts_with(p)) => {
                        digits.replace_all(l, "N").into_owned()
                    }
                    None => l.to_string(),
                })
                .collect();
            lines.sort_unstable();
            lines.dedup();
            shown = format!(
                "(lines sorted, speakers without times: parallel agents interleave)\n{}\n",
                lines.join("\n")
            );
        }
        insta::assert_snapshot!(name, shown);
    }
}

#[test]
fn turns_are_read_from_footer_and_spent_lines() {
    assert_eq!(turns("■ completed · 7 turns · 5ms · 1064 tokens"), Some(7));
    assert_eq!(turns("■ waiting_for_input · 1 turn · 3ms"), Some(1));
    assert_eq!(turns("spent: 12 turns, 8 model calls"), Some(12));
    assert_eq!(turns("no count here"), None);
}

#[test]
fn a_retried_model_call_is_said_once_and_its_error_whole() {
    // A model on a port nobody listens on: every attempt is refused.
    let dir = tempfile::tempdir().unwrap();
    let cfg = r#"
version: 1
models:
  main: {provider: openai, model: m, base_url: "http://127.0.0.1:1/v1", retry: {attempts: 2, initial: 10ms, max: 20ms}}
agents:
  writer: {model: main, instructions: Write.}
workflow:
  sequential: {participants: [writer]}
"#;
    std::fs::write(dir.path().join("r.yaml"), cfg).unwrap();
    let out = common::troupe(dir.path(), &["run", "r.yaml", "hi"])
        .env("OPENAI_API_KEY", "unused")
        .output()
        .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{all}");
    let said: Vec<&str> = all.lines().filter(|l| l.contains("attempt 1")).collect();
    assert_eq!(said.len(), 1, "{all}");
    assert!(
        said[0].starts_with("↻ writer: m call, attempt 1 failed ("),
        "{all}"
    );
    // The cause at the end of the chain is not cut off.
    assert!(said[0].contains("Connection refused"), "{all}");
    assert!(!all.contains(" WARN "), "{all}");
    // One turn, as the footer and `spent:` both say.
    assert!(all.contains("■ failed · 1 turn · "), "{all}");
    assert!(all.contains("spent: 1 turn, "), "{all}");
}
