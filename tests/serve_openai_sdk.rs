//! Acceptance: the official `openai` Python package against `troupe serve`
//! — a whole answer, a streamed one with usage, stored sessions continued
//! (tests/py/openai_sdk.py does the checking).
//!
//! The package lives in a venv that `.ci/python-venv.sh` makes
//! (`target/py-venv`, or `TROUPE_PY_VENV`). Without it the test fails,
//! saying how to make it, unless `TROUPE_ALLOW_SKIP=1` (never in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::serve::{DESK, Server};
use common::{text, write};

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    python.exists().then_some(python)
}

#[test]
fn the_openai_python_sdk_talks_to_the_team() {
    let Some(python) = python() else {
        common::prereq::missing_venv("the openai package");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml"],
        &[("TROUPE_SERVE_TOKEN", "sdk-token")],
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/openai_sdk.py");
    let out = Command::new(python)
        .arg(script)
        .args([s.base.as_str(), "sdk-token"])
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "ok");
}
