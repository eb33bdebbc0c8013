//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with the Node 22 it needs by `.ci/install-mcp-conformance.sh`
//! under target/mcp-conformance/) against `/mcp` on `troupe serve`: every
//! server scenario troupe claims, in both protocol eras (2025-11-25
//! sessions, 2026-07-28 stateless), passes — every check of it, but for
//! the checks the suite itself calls "Not testable" because they need its
//! own diagnostic fixture tools (`test_missing_capability`,
//! `test_streaming_elicitation`, `test_logging_tool`), which a server whose
//! tools are teams does not have.
//!
//! The suite drives servers over HTTP only; `troupe mcp` (stdio) serves
//! the same handler and is driven by the Python SDK (tests/mcp_sdk.rs).
//! The scenarios that need the suite's fixture tools, resources, prompts,
//! completions, logging, sampling or the Tasks extension test features a
//! team-as-tool server does not offer (README, "MCP server").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve::Server;
use common::{text, wait};

/// The scenarios troupe claims, by protocol revision (README lists them).
const CLAIMED: &[(&str, &str)] = &[
    ("2025-11-25", "server-initialize"),
    ("2025-11-25", "ping"),
    ("2025-11-25", "tools-list"),
    ("2025-11-25", "server-sse-multiple-streams"),
    ("2025-11-25", "dns-rebinding-protection"),
    ("2025-11-25", "server-session-lifecycle"),
    ("2026-07-28", "server-stateless"),
    ("2026-07-28", "tools-list"),
    ("2026-07-28", "server-sse-multiple-streams"),
    ("2026-07-28", "dns-rebinding-protection"),
    ("2026-07-28", "http-header-validation"),
];

/// The suite's Node and CLI, or `None` (after saying how to install them).
fn suite() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("TROUPE_MCP_CONFORMANCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-conformance"),
        PathBuf::from,
    );
    let node = dir.join("node_modules/.bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if node.exists() && cli.exists() {
        return Some((node, cli));
    }
    common::prereq::missing(
        "the MCP conformance suite and Node 22 under target/mcp-conformance",
        "`.ci/install-mcp-conformance.sh` (npm, reaches the npm registry)",
    );
    None
}

/// Runs `scenario` at `version` against `url`; the checks that did not
/// pass: every check neither SUCCESS nor SKIPPED (the suite's own "not
/// exercised": in `server-stateless`, the subscription checks, as troupe
/// offers no `subscriptions/listen`) — warnings count — but for the
/// suite's "Not testable" checks that need its diagnostic fixture tools.
fn failures(node: &Path, cli: &Path, url: &str, version: &str, scenario: &str) -> Vec<String> {
    let out_dir = tempfile::tempdir().unwrap();
    let child = Command::new(node)
        .arg(cli)
        .args(["server", "--url", url, "--scenario", scenario])
        .args(["--spec-version", version, "--output-dir"])
        .arg(out_dir.path())
        .env("NO_PROXY", "127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, Duration::from_secs(120));
    let said = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(out_dir.path()).unwrap() {
        let file = entry.unwrap().path().join("checks.json");
        let body = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{scenario} at {version}: no {}: {e}\n{said}",
                file.display()
            )
        });
        let list: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
        checks.extend(list);
    }
    assert!(
        !checks.is_empty(),
        "{scenario} at {version}: no checks ran\n{said}"
    );
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| c["status"] != "SUCCESS" && c["status"] != "SKIPPED")
        .filter(|c| {
            !c["errorMessage"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Not testable: server does not list the diagnostic tool")
        })
        .map(|c| {
            format!(
                "{scenario}@{version}: {} {} {}",
                c["id"], c["status"], c["errorMessage"]
            )
        })
        .collect();
    if bad.is_empty() && !out.status.success() {
        let fixture_only = checks.iter().filter(|c| c["status"] == "FAILURE").all(|c| {
            c["errorMessage"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Not testable")
        });
        assert!(fixture_only, "{scenario} at {version} failed:\n{said}");
    }
    bad
}

#[test]
fn the_official_conformance_suite_passes_every_claimed_server_scenario() {
    let Some((node, cli)) = suite() else { return };
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    for name in ["sequential.yaml", "human_in_the_loop.yaml"] {
        std::fs::copy(examples.join(name), dir.path().join(name)).unwrap();
    }
    // Loopback without a token, as a local user runs it (the suite sends
    // no token; the token is tests/mcp_sdk.rs's).
    let server = Server::start(dir.path(), &["."], &[]);
    let url = server.url("/mcp");
    let mut bad = Vec::new();
    for (version, scenario) in CLAIMED {
        bad.extend(failures(&node, &cli, &url, version, scenario));
    }
    assert!(bad.is_empty(), "failing checks:\n{}", bad.join("\n"));
}
