//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with the Node it needs by `.ci/install-mcp-conformance.sh`
//! under `target/mcp-conformance`) runs its client scenarios against
//! troupe's MCP client, through the driver `examples/mcp_conformance_client.rs`.
//! Every scenario of the eras troupe claims must pass: `initialize`,
//! `tools_call`, `elicitation-sep1034-client-defaults` and `sse-retry`
//! (2025-11-25; the suite has no 2026-07-28 client scenario yet). The
//! `auth/*` scenarios are OAuth flows, which troupe's client does not
//! implement (it sends the configured headers), so they are not run.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{text, wait};

/// The client scenarios run, all of which must pass.
const SCENARIOS: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

/// The suite's directory, when installed.
fn suite() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-conformance");
    let ok = dir.join("node_modules/.bin/node").exists()
        && dir
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
            .exists();
    if ok {
        return Some(dir);
    }
    common::prereq::missing(
        "the MCP conformance suite and Node 22 under target/mcp-conformance",
        "`.ci/install-mcp-conformance.sh` (npm, reaches the npm registry)",
    );
    None
}

/// The driver, which `cargo test` builds beside the tests.
fn driver() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let bin = profile.join("examples/mcp_conformance_client");
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "--example", "mcp_conformance_client"])
            .status()
            .expect("cargo build");
        assert!(status.success(), "cannot build the driver");
    }
    bin
}

#[test]
fn the_conformance_suites_client_scenarios_pass() {
    let Some(dir) = suite() else { return };
    let driver = driver();
    let work = tempfile::tempdir().expect("tempdir");
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let child = Command::new(dir.join("node_modules/.bin/node"))
            .arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["client", "--command"])
            .arg(&driver)
            .args(["--scenario", scenario])
            .current_dir(work.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the conformance suite");
        let out = wait(child, Duration::from_secs(120));
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        if out.status.success() && said.contains("OVERALL: PASSED") {
            passed.push(scenario);
        } else {
            failed.push(format!("{scenario}:\n{said}"));
        }
    }
    eprintln!(
        "MCP conformance, client scenarios: {}/{} passed ({})",
        passed.len(),
        SCENARIOS.len(),
        passed.join(", ")
    );
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
