//! Acceptance of troupe's MCP server against the official Python SDK
//! (`mcp`), as a user's client: over stdio (the SDK spawns `troupe mcp
//! DIR`) and over streamable HTTP (`/mcp` on `troupe serve DIR`, behind
//! its bearer token), each in both protocol eras (2025-11-25 sessions and
//! the 2026-07-28 stateless revision). tests/py/mcp_team_client.py does
//! the checking: the teams are listed as tools, a call answers the team's
//! answer with progress on the way, the team's questions come as
//! elicitations and the run goes on once they are answered, and a
//! cancelled call leaves its run cancelled in the store; statelessly, the
//! `InputRequiredResult` round trip by hand (a forged or spent
//! `requestState` refused, a declined question cancelling the run). The teams are
//! copies of examples/configs/durable.yaml and human_in_the_loop.yaml,
//! scripted (offline).
//!
//! A second script reads what `serve: {mcp: …}` declares (resources, a
//! template, a prompt, completion, a subscription told of a file change,
//! log messages at the level set, content blocks, a declared input).
//!
//! The SDK lives in the venv `.ci/python-venv.sh` makes (`target/py-venv`,
//! or `TROUPE_PY_VENV`). Without it the tests fail, saying how to make it,
//! unless `TROUPE_ALLOW_SKIP=1` (never in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve::Server;
use common::{text, wait};

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import mcp, httpx2"])
            .output()
            .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    common::prereq::missing_venv("the MCP SDK (mcp)");
    None
}

/// A directory holding the two example teams.
fn teams() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    for name in ["durable.yaml", "human_in_the_loop.yaml"] {
        std::fs::copy(examples.join(name), dir.path().join(name)).unwrap();
    }
    dir
}

/// Runs the SDK client with `args`; panics with its output unless every
/// check passed.
fn drive(python: &Path, dir: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mcp_team_client.py");
    let child = Command::new(python)
        .arg(script)
        .args(["--troupe", TROUPE, "--dir"])
        .arg(dir)
        .args(args)
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, Duration::from_secs(120));
    let said = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && said.contains("all checks passed"),
        "the MCP SDK client failed:\n{said}"
    );
    for check in [
        "teams listed as tools",
        "a call without `message` is the tool's error",
        "an unknown tool is refused",
        "the call answers the team's answer",
        "progress notifications, increasing",
        "the team's three questions came as elicitations",
        "answered, the run goes on to its answer",
        "the cancelled call cancelled the run",
        "the cancelled run stopped",
    ] {
        assert!(
            said.lines()
                .any(|l| l.starts_with("ok: ") && l.contains(check)),
            "no `{check}`:\n{said}"
        );
    }
    let stateless = args.windows(2).any(|w| w == ["--mode", "2026-07-28"]);
    for check in [
        "a question is an InputRequiredResult with a requestState",
        "a forged requestState is refused",
        "a declined question cancels the run",
        "an answered requestState is spent",
    ] {
        if !stateless {
            break;
        }
        assert!(
            said.lines()
                .any(|l| l.starts_with("ok: ") && l.contains(check)),
            "no `{check}`:\n{said}"
        );
    }
    said
}

fn over_stdio(mode: &str) {
    let Some(python) = python() else { return };
    let dir = teams();
    drive(&python, dir.path(), &["--mode", mode, "--stdio"]);
}

fn over_http(mode: &str) {
    let Some(python) = python() else { return };
    let dir = teams();
    let token = "mcp-test-token";
    let server = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", token)]);
    // The same token as every route: none, no MCP.
    let refused = common::serve::client()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let url = server.url("/mcp");
    drive(
        &python,
        dir.path(),
        &["--mode", mode, "--url", &url, "--token", token],
    );
}

#[test]
fn troupe_mcp_refuses_a_missing_config_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(dir.path(), &["mcp", "nowhere.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(said.contains("nowhere.yaml"), "{said}");
    assert!(
        text(&out.stdout).is_empty(),
        "stdout is the protocol's only"
    );
    let out = common::run(dir.path(), &["mcp", "."]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("troupe mcp: no config (*.yaml, *.yml) in directory"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn python_sdk_uses_a_team_over_stdio_in_a_session() {
    over_stdio("legacy");
}

#[test]
fn python_sdk_uses_a_team_over_stdio_statelessly() {
    over_stdio("2026-07-28");
}

#[test]
fn python_sdk_uses_a_team_over_http_in_a_session() {
    over_http("legacy");
}

#[test]
fn python_sdk_uses_a_team_over_http_statelessly() {
    over_http("2026-07-28");
}

#[test]
fn python_sdk_reads_the_declared_resources_prompts_completions_and_logs_over_stdio() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp/conformance");
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mcp_surface_client.py");
    let child = Command::new(python)
        .arg(script)
        .args(["--troupe", TROUPE, "--dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, Duration::from_secs(120));
    let said = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && said.contains("all checks passed"),
        "the MCP SDK client failed:\n{said}"
    );
}
