//! Time travel through the `troupe` binary: `troupe runs show` lists a
//! run's checkpoints, `troupe run --resume RUN --at CHECKPOINT --fork`
//! carries it on from one of them as a new run (its last message edited),
//! both lineages are listed by `troupe runs`, and the run forked from is
//! left byte for byte as it was — in a SQLite and in a directory store.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{final_thread, jsonl, listed, run, text, write};

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// Three steps, checkpointed in `store`.
fn steps(store: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted, replies: [\"unused\"]}}
agents:
  planner: {{model: m, script: [\"an outline\"]}}
  writer: {{model: m, script: [\"a draft\"]}}
  editor: {{model: m, script: [\"edited: looks good\"]}}
workflow:
  steps: [{{agent: planner}}, {{agent: writer}}, {{agent: editor}}]
checkpoint: {store}
"
    )
}

/// Every byte the store keeps of run `run_id`: its SQLite rows, or the
/// files of its directory.
fn stored(dir: &Path, sqlite: bool, run_id: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if sqlite {
        let conn = rusqlite::Connection::open(dir.join("state/runs.db")).expect("open the db");
        let mut q = conn
            .prepare(
                "SELECT id, parent, created_secs, created_nanos, superstep, topology_hash, \
                 format_version, checksum, payload FROM checkpoints WHERE run_id = ?1",
            )
            .expect("query");
        let rows = q
            .query_map([run_id], |r| {
                let head = format!(
                    "{:?} {} {} {} {} {} {}",
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                );
                let mut bytes = head.into_bytes();
                bytes.extend(r.get::<_, Vec<u8>>(8)?);
                Ok((r.get::<_, String>(0)?, bytes))
            })
            .expect("rows");
        for row in rows {
            let (id, bytes) = row.expect("a row");
            out.insert(id, bytes);
        }
    } else {
        let run_dir = dir.join("state/checkpoints").join(run_id);
        for entry in std::fs::read_dir(&run_dir).expect("the run's directory") {
            let path = entry.expect("an entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            out.insert(name, std::fs::read(&path).expect("read"));
        }
    }
    assert!(!out.is_empty(), "nothing stored of {run_id}");
    out
}

/// `troupe runs show FILE RUN --json`: the run, then its checkpoints.
fn show(dir: &Path, cfg: &str, run_id: &str) -> (Value, Vec<Value>) {
    let out = run(dir, &["runs", "show", cfg, run_id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut lines = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect::<Vec<Value>>();
    let head = lines.remove(0);
    (head, lines)
}

fn texts(thread: &troupe::Thread) -> Vec<String> {
    thread
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect()
}

fn fork_and_continue(store: &str, sqlite: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg_path = write(dir.path(), "steps.yaml", &steps(store));
    let cfg = cfg_path.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &["run", "-q", "--run-id", "orig", cfg, "write it"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // Its checkpoints: one per superstep, who spoke last in each.
    let (head, checkpoints) = show(dir.path(), cfg, "orig");
    assert_eq!(head["run_id"], "orig");
    assert_eq!(head["forked_from"], Value::Null);
    assert_eq!(head["checkpoints"], checkpoints.len());
    let speakers: Vec<&str> = checkpoints
        .iter()
        .filter_map(|c| c["last_speaker"].as_str())
        .collect();
    for who in ["planner", "writer", "editor"] {
        assert!(speakers.contains(&who), "{checkpoints:#?}");
    }
    let at = checkpoints
        .iter()
        .find(|c| c["last_speaker"] == "writer")
        .expect("the checkpoint after the writer");
    assert_eq!(at["last_message"], "a draft");
    let k = at["checkpoint"].as_str().expect("an id").to_string();
    let table = run(dir.path(), &["runs", "show", cfg, "orig"]);
    let table = text(&table.stdout);
    assert!(
        table.contains("LAST SPEAKER") && table.contains(&k),
        "{table}"
    );
    let before = stored(dir.path(), sqlite, "orig");

    // Forked at the writer's checkpoint, the draft edited: the editor
    // alone runs, after the edited draft.
    let forked = run(
        dir.path(),
        &[
            "run",
            cfg,
            "--resume",
            "orig",
            "--at",
            &k,
            "--fork",
            "orig-b",
            "--edit-last",
            "an edited draft",
            "--events",
            "jsonl",
        ],
    );
    assert_eq!(forked.status.code(), Some(0), "{}", text(&forked.stderr));
    let events = jsonl(&forked);
    let started: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "agent_started")
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(
        started.iter().all(|p| p.ends_with("/editor")) && !started.is_empty(),
        "{started:?}"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["run_id"].is_string())
            .all(|e| e["run_id"] == "orig-b"),
        "events of another run"
    );
    let fork_thread = texts(&final_thread(&cfg_path, "orig-b"));
    assert_eq!(
        fork_thread,
        [
            "write it",
            "an outline",
            "an edited draft",
            "edited: looks good"
        ]
    );

    // The original: its checkpoints byte for byte as they were.
    unchanged(&stored(dir.path(), sqlite, "orig"), &before);

    // A fork of its own, with a made-up id.
    let again = run(
        dir.path(),
        &["run", "-q", cfg, "--resume", "orig", "--at", &k, "--fork"],
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));

    // Both lineages listed.
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs.len(), 3, "{runs:#?}");
    for r in &runs {
        let expected = if r["run_id"] == "orig" {
            Value::Null
        } else {
            json!({"run_id": "orig", "checkpoint": k})
        };
        let mut got = r["forked_from"].clone();
        if let Some(o) = got.as_object_mut() {
            o.remove("forked_at");
        }
        assert_eq!(got, expected, "{r}");
        assert_eq!(r["status"], "completed", "{r}");
    }
    let table = text(&run(dir.path(), &["runs", cfg]).stdout);
    assert!(table.contains("FORKED FROM"), "{table}");
    assert_eq!(table.matches(&format!("orig@{k}")).count(), 2, "{table}");
    let (head, fork_cps) = show(dir.path(), cfg, "orig-b");
    assert_eq!(head["forked_from"]["run_id"], "orig", "{head}");
    assert_eq!(head["forked_from"]["checkpoint"], k.as_str(), "{head}");
    assert_eq!(
        fork_cps.last().expect("a checkpoint")["last_speaker"],
        "editor"
    );
    let shown = text(&run(dir.path(), &["runs", "show", cfg, "orig-b"]).stdout);
    assert!(shown.contains(&format!("forked from orig@{k}")), "{shown}");
    unchanged(&stored(dir.path(), sqlite, "orig"), &before);
    // Its thread still has the draft (read last: a resume of it saves).
    assert_eq!(
        texts(&final_thread(&cfg_path, "orig")),
        ["write it", "an outline", "a draft", "edited: looks good"]
    );
}

/// Asserts the store holds `before` of a run, byte for byte.
fn unchanged(now: &BTreeMap<String, Vec<u8>>, before: &BTreeMap<String, Vec<u8>>) {
    let keys = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(now),
        keys(before),
        "the original's checkpoints changed"
    );
    for (k, bytes) in before {
        assert!(now[k] == *bytes, "the original's `{k}` changed");
    }
}

#[test]
fn a_fork_of_a_sqlite_run_continues_edited_and_leaves_the_original_untouched() {
    fork_and_continue("{store: sqlite, path: state/runs.db}", true);
}

#[test]
fn a_fork_of_a_directory_run_continues_edited_and_leaves_the_original_untouched() {
    fork_and_continue("{store: dir, path: state}", false);
}

#[test]
fn a_fork_with_bad_edits_or_a_taken_id_is_refused_naming_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "steps.yaml",
        &steps("{store: sqlite, path: state/runs.db}"),
    );
    let cfg = cfg.to_str().expect("utf-8");
    for id in ["a", "b"] {
        let out = run(dir.path(), &["run", "-q", "--run-id", id, cfg, "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let cases: [(&[&str], &str); 4] = [
        (
            &["--fork", "c", "--set-state", "tone=formal"],
            "--set-state tone",
        ),
        (&["--fork", "b"], "already holds a run 'b'"),
        (&["--fork", "a"], "a run id of its own"),
        (
            &["--fork", "c", "--at", "0123"],
            "--at takes a checkpoint id",
        ),
    ];
    for (extra, said) in cases {
        let mut args = vec!["run", cfg, "--resume", "a"];
        args.extend_from_slice(extra);
        let out = run(dir.path(), &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(said), "{extra:?}: {err}");
    }
    assert_eq!(listed(dir.path(), cfg).len(), 2, "nothing made");
    // --edit-last needs --fork.
    let out = run(
        dir.path(),
        &["run", cfg, "--resume", "a", "--edit-last", "x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
