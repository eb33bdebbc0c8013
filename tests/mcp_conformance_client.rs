//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with the Node it needs by `.ci/install-mcp-conformance.sh`
//! under `target/mcp-conformance`) runs its client scenarios against
//! troupe's MCP client, through the driver `examples/mcp_conformance_client.rs`,
//! at each era's wire (`--spec-version`). Every scenario listed must pass
//! with every check passing: the client scenarios of the suite's `client
//! --requirements 2025-11-25` and `--requirements 2026-07-28` sets, plus
//! `json-schema-2020-12-preservation` (run, not scored, by both sets).
//! OAuth (`auth/*`) runs through troupe's `McpOAuth`, its browser step done
//! headlessly by the driver.
//! Every client scenario of both sets is run; the sets' `extension`
//! scenarios (client credentials, DPoP, enterprise-managed authorization,
//! workload identity), which neither set scores, are not.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{text, wait};

/// The client scenarios run at the 2025-11-25 wire, all of which must pass.
const SESSION_ERA: [&str; 19] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "json-schema-2020-12-preservation",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
];

/// The client scenarios run at the 2026-07-28 (stateless) wire, all of
/// which must pass.
const STATELESS_ERA: [&str; 33] = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/authorization-server-migration",
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

/// Runs `scenarios` at the wire of `era`: the names passed, and the
/// failures with what the suite said.
fn run(dir: &Path, driver: &Path, era: &str, scenarios: &[&str]) -> (Vec<String>, Vec<String>) {
    let work = tempfile::tempdir().expect("tempdir");
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for scenario in scenarios {
        let child = Command::new(dir.join("node_modules/.bin/node"))
            .arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["client", "--command"])
            .arg(driver)
            .args(["--scenario", scenario, "--spec-version", era])
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
            passed.push(scenario.to_string());
        } else {
            failed.push(format!("{scenario} at {era}:\n{said}"));
        }
    }
    eprintln!(
        "MCP conformance, client scenarios at {era}: {}/{} passed ({})",
        passed.len(),
        scenarios.len(),
        passed.join(", ")
    );
    (passed, failed)
}

#[test]
fn the_conformance_suites_client_scenarios_pass_in_both_eras() {
    let Some(dir) = suite() else { return };
    let driver = driver();
    let (_, mut failed) = run(&dir, &driver, "2025-11-25", &SESSION_ERA);
    let (_, stateless_failed) = run(&dir, &driver, "2026-07-28", &STATELESS_ERA);
    failed.extend(stateless_failed);
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
