//! Stores that break under a run, through the CLI: a checkpoint log cut
//! at lengths inside its last record (every one with
//! `TROUPE_TORN_STRIDE=1`), a damaged record in the middle
//! of a log, a damaged SQLite row, a disk that fills up under a run
//! (`RLIMIT_FSIZE`: writes past a size fail with `EFBIG`, as on a full
//! disk), and `--resume RUN --at CHECKPOINT`.
//!
//! Every broken run resumes to the thread an uninterrupted run ends with
//! (no message lost or repeated), and `troupe runs` lists every run.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{final_thread, jsonl, listed, run, run_listed, text, troupe, wait, write};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// Five steps, each agent replying `size` bytes, checkpointed in `store`.
fn config(store: &str, size: usize, extra: &str) -> String {
    let reply = |tag: &str| {
        let mut r = format!("{tag}: ");
        while r.len() < size {
            r.push_str("actors share nothing ");
        }
        r.truncate(size.max(tag.len() + 2));
        r
    };
    let path = if store == "dir" {
        "state"
    } else {
        "state/runs.db"
    };
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  researcher: {{model: m, script: [\"{}\"]}}
  outliner: {{model: m, script: [\"{}\"]}}
  writer: {{model: m, script: [\"{}\"]}}
  critic: {{model: m, script: [\"{}\"]}}
  editor: {{model: m, script: [\"{}\"]}}
workflow:
  steps: [{{agent: researcher}}, {{agent: outliner}}, {{agent: writer}}, {{agent: critic}}, {{agent: editor}}]
checkpoint: {{store: {store}, path: {path}{extra}}}
",
        reply("facts"),
        reply("outline"),
        reply("draft"),
        reply("review"),
        reply("final"),
    )
}

/// A thread as (who, what) pairs, to compare runs (message ids differ).
fn said(t: &troupe::Thread) -> Vec<(String, String)> {
    t.messages()
        .iter()
        .map(|m| (m.source.to_string(), m.text_content().into_owned()))
        .collect()
}

fn ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

/// The byte offsets where a checkpoint log's records start.
fn record_starts(log: &[u8]) -> Vec<usize> {
    let mut at = 8;
    let mut starts = Vec::new();
    while at + 8 <= log.len() {
        starts.push(at);
        let len = u32::from_le_bytes(log[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 8 + len;
    }
    assert_eq!(at, log.len(), "a whole log");
    starts
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the log")
        .set_len(len)
        .expect("truncate");
}

/// A store with two finished runs, `other` and `r`; `r`'s thread.
fn two_runs(dir: &Path, store: &str, size: usize) -> (PathBuf, Vec<(String, String)>) {
    let cfg = write(dir, "team.yaml", &config(store, size, ""));
    let c = cfg.to_str().expect("utf-8");
    ok(&run(dir, &["run", "-q", "--run-id", "other", c, "go"]));
    ok(&run(dir, &["run", "-q", "--run-id", "r", c, "go"]));
    let clean = said(&final_thread(&cfg, "r"));
    assert_eq!(clean.len(), 6, "{clean:?}");
    (cfg, clean)
}

#[test]
fn a_log_cut_at_every_length_inside_its_last_record_resumes_whole() {
    let pristine = tempfile::tempdir().expect("tempdir");
    let (_, clean) = two_runs(pristine.path(), "dir", 12);
    let log_rel = Path::new("state/checkpoints/r/checkpoints.log");
    let log = std::fs::read(pristine.path().join(log_rel)).expect("the log");
    let last = *record_starts(&log).last().expect("records");
    let last_len = log.len() - last;
    // Every length with `TROUPE_TORN_STRIDE=1` (`benches/crash.sh`);
    // about 40 of them, the first and last included, for CI (every length
    // is cut in-process by runtime/tests/torn_tail.rs).
    let stride = std::env::var("TROUPE_TORN_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((last_len / 40).max(1));
    let mut keeps: Vec<usize> = (1..last_len).step_by(stride).collect();
    keeps.push(last_len - 1);
    keeps.dedup();
    let mut cases = 0;
    for keep in keeps {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(pristine.path(), dir.path());
        let cfg = dir.path().join("team.yaml");
        let c = cfg.to_str().expect("utf-8");
        cut(&dir.path().join(log_rel), (last + keep) as u64);
        // Listing the torn store works and lists both runs.
        let ids: Vec<String> = listed(dir.path(), c)
            .iter()
            .map(|r| r["run_id"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(ids.len(), 2, "keep {keep}: {ids:?}");
        let out = run(dir.path(), &["run", "--resume", "r", c]);
        ok(&out);
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("dropped {keep} bytes after byte {last}")),
            "keep {keep}: {err}"
        );
        assert_eq!(said(&final_thread(&cfg, "r")), clean, "keep {keep}");
        assert_eq!(run_listed(dir.path(), c, "r")["status"], "completed");
        assert_eq!(run_listed(dir.path(), c, "other")["status"], "completed");
        // The log is whole again: nothing follows its last record.
        let repaired = std::fs::read(dir.path().join(log_rel)).expect("the log");
        record_starts(&repaired);
        cases += 1;
    }
    assert!(cases >= 40.min(last_len - 1), "only {cases} cuts");
    println!("torn tails: {cases} cuts of a {last_len}-byte last record resumed whole");
}

#[test]
fn a_damaged_record_mid_log_makes_only_its_run_unreadable_and_resume_falls_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cfg, clean) = two_runs(dir.path(), "dir", 40);
    let c = cfg.to_str().expect("utf-8");
    let log = dir.path().join("state/checkpoints/r/checkpoints.log");
    let mut bytes = std::fs::read(&log).expect("the log");
    let starts = record_starts(&bytes);
    assert!(starts.len() >= 4, "{starts:?}");
    let damaged = starts[2];
    bytes[damaged + 20] ^= 0x40;
    std::fs::write(&log, &bytes).expect("write");

    let out = run(dir.path(), &["runs", c]);
    ok(&out);
    let table = text(&out.stdout);
    assert!(
        table.contains("other") && table.contains("completed"),
        "{table}"
    );
    let r = run_listed(dir.path(), c, "r");
    assert_eq!(r["status"], "unreadable", "{r}");
    assert!(
        r["unreadable"]
            .as_str()
            .is_some_and(|u| u.contains(&format!("byte {damaged}"))),
        "{r}"
    );

    let out = run(dir.path(), &["run", "--resume", "r", c]);
    ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("after byte {damaged}")) && err.contains("damaged log is kept as"),
        "{err}"
    );
    assert_eq!(said(&final_thread(&cfg, "r")), clean);
    assert_eq!(run_listed(dir.path(), c, "r")["status"], "completed");
}

#[test]
fn a_damaged_sqlite_row_is_skipped_for_the_checkpoint_before_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cfg, clean) = two_runs(dir.path(), "sqlite", 40);
    let c = cfg.to_str().expect("utf-8");
    let db = dir.path().join("state/runs.db");
    let newest: String = {
        let conn = rusqlite::Connection::open(&db).expect("open");
        let id: String = conn
            .query_row(
                "SELECT id FROM checkpoints WHERE run_id = 'r' ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .expect("newest");
        conn.execute(
            "UPDATE checkpoints SET payload = zeroblob(length(payload)) WHERE id = ?1",
            [&id],
        )
        .expect("damage");
        id
    };
    let r = run_listed(dir.path(), c, "r");
    assert_eq!(r["status"], "unreadable", "{r}");
    assert_eq!(run_listed(dir.path(), c, "other")["status"], "completed");

    let out = run(dir.path(), &["run", "--resume", "r", c]);
    ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("skipped 1 damaged checkpoint") && err.contains(&newest),
        "{err}"
    );
    assert_eq!(said(&final_thread(&cfg, "r")), clean);
    assert_eq!(run_listed(dir.path(), c, "r")["status"], "completed");
    let integrity: String = rusqlite::Connection::open(&db)
        .expect("open")
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
}

#[test]
fn resume_at_a_chosen_checkpoint_carries_on_from_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "team.yaml", &config("sqlite", 20, ""));
    let c = cfg.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", "--run-id", "r", c, "go"],
    );
    ok(&out);
    let saved: Vec<(String, u64)> = jsonl(&out)
        .iter()
        .filter(|e| e["type"] == "checkpoint_saved")
        .map(|e| {
            (
                e["checkpoint"].as_str().expect("id").to_string(),
                e["superstep"].as_u64().expect("superstep"),
            )
        })
        .collect();
    assert!(saved.len() >= 3, "{saved:?}");
    let clean = said(&final_thread(&cfg, "r"));
    let (second, _) = &saved[1];
    let out = run(
        dir.path(),
        &[
            "run", "--events", "jsonl", "--resume", "r", "--at", second, c,
        ],
    );
    ok(&out);
    // Only the steps after the chosen checkpoint ran again.
    let started = jsonl(&out)
        .iter()
        .filter(|e| e["type"] == "agent_started")
        .count();
    assert_eq!(started, 3, "{}", text(&out.stdout));
    assert_eq!(said(&final_thread(&cfg, "r")), clean);

    for (bad, why) in [
        ("nope", "--at takes a checkpoint id"),
        ("0000000000000000000000000000beef", "no checkpoint"),
    ] {
        let out = run(dir.path(), &["run", "--resume", "r", "--at", bad, c]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
    }
}

/// `troupe args` in `dir` with writes past `blocks` 512-byte blocks (1 KiB
/// in bash) failing with `EFBIG`, as they would on a full disk (SIGXFSZ
/// ignored, so the write fails rather than killing the process).
#[cfg(unix)]
fn with_file_limit(dir: &Path, blocks: u64, args: &[&str]) -> Output {
    let mut sh_args = vec![
        "-c",
        "trap '' XFSZ; ulimit -f \"$1\" || exit 99; shift; exec \"$0\" \"$@\"",
        common::TROUPE,
    ];
    let limit = blocks.to_string();
    sh_args.push(&limit);
    sh_args.extend_from_slice(args);
    // The environment `troupe` gets in every test.
    let model = troupe(dir, &[]);
    let mut sh = std::process::Command::new("/bin/sh");
    sh.args(&sh_args).current_dir(dir);
    for (k, v) in model.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    wait(sh.spawn().expect("start sh"), Duration::from_secs(30))
}

#[cfg(unix)]
#[test]
fn a_full_disk_fails_the_run_naming_the_error_and_resume_completes_later() {
    for store in ["dir", "sqlite"] {
        // The uninterrupted run in a store of its own: a SQLite store is
        // one file, and the limit is on a file's size, so the run under
        // the limit starts from an empty store.
        let clean_dir = tempfile::tempdir().expect("tempdir");
        let clean_cfg = write(clean_dir.path(), "team.yaml", &config(store, 48 * 1024, ""));
        ok(&run(
            clean_dir.path(),
            &[
                "run",
                "-q",
                "--run-id",
                "clean",
                clean_cfg.to_str().expect("utf-8"),
                "go",
            ],
        ));
        let clean = said(&final_thread(&clean_cfg, "clean"));

        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = write(dir.path(), "team.yaml", &config(store, 48 * 1024, ""));
        let c = cfg.to_str().expect("utf-8");
        // Room for a checkpoint or two, not for the whole run (SQLite's
        // WAL takes whole pages, and more of them than a log's records).
        let blocks = if store == "dir" { 240 } else { 400 };
        let out = with_file_limit(dir.path(), blocks, &["run", "-q", "--run-id", "r", c, "go"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{store}: {err}");
        let file = if store == "dir" {
            "checkpoints.log"
        } else {
            "runs.db"
        };
        assert!(
            err.contains("run failed")
                && err.contains(&format!("{store} store at"))
                && err.contains(file)
                && err.contains("not saved"),
            "{store}: {err}"
        );
        if store == "dir" {
            assert!(err.contains("os error 27"), "{store}: {err}");
        }
        assert!(err.contains("--resume r"), "{store}: {err}");
        assert!(out.stdout.is_empty(), "{store}: no final response");

        // Space is back: the run carries on from its last good checkpoint.
        let out = run(dir.path(), &["run", "-q", "--resume", "r", c]);
        ok(&out);
        assert_eq!(said(&final_thread(&cfg, "r")), clean, "{store}");
        assert_eq!(run_listed(dir.path(), c, "r")["status"], "completed");
    }
}

#[cfg(unix)]
#[test]
fn on_error_warn_keeps_running_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "team.yaml",
        &config("dir", 48 * 1024, ", on_error: warn"),
    );
    let c = cfg.to_str().expect("utf-8");
    let out = with_file_limit(dir.path(), 240, &["run", "--run-id", "r", c, "go"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not saved") && err.contains("os error 27"),
        "{err}"
    );
    // The warning is an event too (the console's, on stdout).
    let shown = text(&out.stdout);
    assert!(
        shown.contains("⚠") && shown.contains("not saved"),
        "{shown}"
    );
}

#[test]
fn a_checkpoint_path_expands_variables_and_an_empty_one_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = config("sqlite", 10, "").replace(
        "path: state/runs.db",
        "path: \"${TROUPE_FAULTS_STATE:-state}/runs.db\"",
    );
    let cfg = write(dir.path(), "team.yaml", &body);
    let c = cfg.to_str().expect("utf-8");
    let out = troupe(dir.path(), &["run", "-q", "--run-id", "r", c, "go"])
        .env("TROUPE_FAULTS_STATE", "elsewhere")
        .spawn()
        .expect("start");
    ok(&wait(out, Duration::from_secs(30)));
    assert!(dir.path().join("elsewhere/runs.db").is_file());
    let listed = troupe(dir.path(), &["runs", "--json", c])
        .env("TROUPE_FAULTS_STATE", "elsewhere")
        .spawn()
        .expect("start");
    let listed = wait(listed, Duration::from_secs(30));
    ok(&listed);
    assert!(text(&listed.stdout).contains("\"r\""));
    assert!(
        std::fs::read_dir(dir.path()).expect("read dir").all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .contains('$')),
        "a path taken literally"
    );

    let cfg = write(
        dir.path(),
        "empty.yaml",
        &config("sqlite", 10, "").replace("path: state/runs.db", "path: ''"),
    );
    let c = cfg.to_str().expect("utf-8");
    for cmd in ["validate", "run"] {
        let args: Vec<&str> = if cmd == "run" {
            vec!["run", c, "go"]
        } else {
            vec!["validate", c]
        };
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("field `checkpoint.path`: an empty `path`"),
            "{cmd}: {}",
            text(&out.stderr)
        );
    }
}
