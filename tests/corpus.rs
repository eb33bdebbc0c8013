//! The config corpus through the `troupe` binary.
//!
//! `tests/corpus/malformed/*.yaml`: each case opens with
//!
//! ```yaml
//! # exit: 2
//! # error: NAME.yaml:LINE:COL: field `…`: what is wrong
//! ```
//!
//! and `troupe validate` must exit with that code and print that text (a
//! located message, `FILE:LINE:COL`); every other case also goes through
//! `troupe run`, which must refuse it the same way. Files under `include/`
//! are nested by the cases, not cases themselves.
//!
//! `tests/corpus/trips/*.yaml` (the same header): configs that look valid
//! but that `run` would trip on (issue 36); each one `validate` refuses
//! at the field, naming the fix, and `run` the same way.
//!
//! `examples/configs/*.yaml` and `tests/corpus/valid/*.yaml`: `validate`
//! exits 0, and then `run` (offline, scripted) does not fail for a config
//! reason: `validate` exit 0 ⇒ `run` runs.
//!
//! Every failure is reported at once.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{text, wait};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `troupe args` in `dir`, with the corpus's unset variable unset.
fn troupe(dir: &Path, args: &[&str]) -> Output {
    let child = common::troupe(dir, args)
        .env_remove("TROUPE_CORPUS_UNSET")
        .spawn()
        .expect("start troupe");
    wait(child, Duration::from_secs(30))
}

/// Copies the files of `from` (and its subdirectories) into `to`, so that
/// runs create their stores away from the repository.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make a directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The `.yaml` files directly in `dir`, sorted by name.
fn configs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read a corpus directory")
        .map(|e| e.expect("a directory entry").file_name())
        .filter_map(|n| n.to_str().map(str::to_string))
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}

/// A malformed case: what `validate` must say.
struct Expected {
    exit: i32,
    error: String,
}

/// Reads the `# exit:` and `# error:` header lines of a case.
fn expected(body: &str) -> Result<Expected, String> {
    let mut lines = body.lines();
    let exit = lines
        .next()
        .and_then(|l| l.strip_prefix("# exit: "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or("first line is not `# exit: N`")?;
    let error = lines
        .next()
        .and_then(|l| l.strip_prefix("# error: "))
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .ok_or("second line is not `# error: FILE:LINE:COL: …`")?;
    // Located: `FILE:LINE:COL:` with a line and column from 1.
    let mut parts = error.splitn(4, ':');
    let (_, line, col) = (parts.next(), parts.next(), parts.next());
    let located = [line, col]
        .iter()
        .all(|p| p.and_then(|p| p.parse::<u32>().ok()).is_some_and(|n| n > 0));
    if !located {
        return Err(format!("`{error}` is not located as FILE:LINE:COL"));
    }
    Ok(Expected { exit, error })
}

/// What is wrong with one invocation's outcome, if anything.
fn judge(what: &str, out: &Output, want: &Expected) -> Option<String> {
    let err = text(&out.stderr);
    let mut wrong = Vec::new();
    if out.status.code() != Some(want.exit) {
        wrong.push(format!("exit {:?}, not {}", out.status.code(), want.exit));
    }
    if !err.contains(&want.error) {
        wrong.push(format!("no `{}`", want.error));
    }
    if err.contains("panicked") {
        wrong.push("a panic".into());
    }
    (!wrong.is_empty()).then(|| format!("{what}: {}\n    stderr: {}", wrong.join("; "), err.trim()))
}

#[test]
fn every_malformed_config_is_refused_with_a_located_error() {
    let source = root().join("tests/corpus/malformed");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&source, dir.path());
    let cases = configs(dir.path());
    assert!(cases.len() >= 120, "only {} cases", cases.len());
    let mut failures = Vec::new();
    let mut runs = 0;
    for (i, name) in cases.iter().enumerate() {
        let body = std::fs::read(dir.path().join(name)).expect("read a case");
        let want = match expected(&String::from_utf8_lossy(&body)) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{name}: bad header: {e}"));
                continue;
            }
        };
        let out = troupe(dir.path(), &["validate", name]);
        failures.extend(judge(&format!("validate {name}"), &out, &want));
        if i % 2 == 0 {
            runs += 1;
            let out = troupe(
                dir.path(),
                &["run", "--offline", "--no-input", "--quiet", name, "a task"],
            );
            failures.extend(judge(&format!("run {name}"), &out, &want));
        }
    }
    assert!(runs >= 60, "only {runs} runs");
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_config_run_would_trip_on_is_refused_by_validate() {
    let source = root().join("tests/corpus/trips");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&source, dir.path());
    let cases = configs(dir.path());
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for name in &cases {
        let body = std::fs::read(dir.path().join(name)).expect("read a case");
        let want = match expected(&String::from_utf8_lossy(&body)) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{name}: bad header: {e}"));
                continue;
            }
        };
        let out = troupe(dir.path(), &["validate", name]);
        failures.extend(judge(&format!("validate {name}"), &out, &want));
        let out = troupe(
            dir.path(),
            &["run", "--offline", "--no-input", "--quiet", name, "a task"],
        );
        failures.extend(judge(&format!("run {name}"), &out, &want));
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_valid_config_validates_and_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (from, into) in [
        ("examples/configs", "examples"),
        ("tests/corpus/valid", "valid"),
    ] {
        let copy = dir.path().join(into);
        copy_dir(&root().join(from), &copy);
        for name in configs(&copy) {
            checked += 1;
            let out = troupe(&copy, &["validate", "--deny-warnings", &name]);
            if out.status.code() != Some(0) {
                failures.push(format!(
                    "validate {from}/{name}: exit {:?}\n    stderr: {}",
                    out.status.code(),
                    text(&out.stderr).trim()
                ));
                continue;
            }
            let out = troupe(
                &copy,
                &["run", "--offline", "--no-input", "--quiet", &name, "a task"],
            );
            // Done (0), or waiting for an answer (3): anything else is
            // a config `validate` let through.
            let err = text(&out.stderr);
            if !matches!(out.status.code(), Some(0 | 3)) || err.contains("panicked") {
                failures.push(format!(
                    "run {from}/{name}: exit {:?} after validate passed\n    stderr: {}",
                    out.status.code(),
                    err.trim()
                ));
            }
        }
    }
    assert!(checked >= 20, "only {checked} valid configs");
    assert!(
        failures.is_empty(),
        "{} of {checked} valid configs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
