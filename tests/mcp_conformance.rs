//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with the Node 22 it needs by `.ci/install-mcp-conformance.sh`
//! under target/mcp-conformance/) against `/mcp` on `troupe serve` serving
//! `examples/mcp/conformance/`: the suite's fixture tools, resources and
//! prompts written as troupe configs (scripted agents, `user:` agents
//! answered by a person, the client's model or its roots, resources and
//! prompts under `serve: {mcp: …}`). Each era's required server set (the
//! suite's `--requirements 2025-11-25` and `--requirements 2026-07-28`)
//! runs, and every check of every required scenario passes: no failure, no
//! warning.
//!
//! The suite drives servers over HTTP only; `troupe mcp` (stdio) serves
//! the same handler and is driven by the Python SDK (tests/mcp_sdk.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve::Server;
use common::{text, wait};

/// The server scenarios `--requirements 2025-11-25` requires (README
/// lists them).
const REQUIRED_2025: &[&str] = &[
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
];

/// The server scenarios `--requirements 2026-07-28` requires.
const REQUIRED_2026: &[&str] = &[
    "server-stateless",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "caching",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
];

/// Scenarios troupe passes beyond the required sets (run by the suite as
/// "not scored"), held to the same bar.
const ALSO: &[(&str, &str)] = &[
    ("2025-11-25", "server-session-lifecycle"),
    ("2025-11-25", "json-schema-2020-12"),
    ("2026-07-28", "json-schema-2020-12"),
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

/// One scenario's checks: how many passed, and each that did not (a
/// failure or a warning).
#[derive(Default)]
struct Outcome {
    passed: usize,
    bad: Vec<String>,
}

/// Runs `--requirements version` against `url`; each scenario's outcome.
fn run_era(node: &Path, cli: &Path, url: &str, version: &str) -> BTreeMap<String, Outcome> {
    let out_dir = tempfile::tempdir().unwrap();
    let child = Command::new(node)
        .arg(cli)
        .args(["server", "--url", url, "--requirements", version])
        .arg("--output-dir")
        .arg(out_dir.path())
        .env("NO_PROXY", "127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, Duration::from_secs(300));
    let said = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    for entry in std::fs::read_dir(out_dir.path()).unwrap() {
        let dir = entry.unwrap().path();
        // `server-<scenario>-<time>`, the time as 2026-12-06T13-00-04-527Z.
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("an unexpected results folder {name}\n{said}"));
        let body = std::fs::read_to_string(dir.join("checks.json"))
            .unwrap_or_else(|e| panic!("{scenario} at {version}: no checks.json: {e}\n{said}"));
        let checks: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
        let outcome = outcomes.entry(scenario.clone()).or_default();
        for c in checks {
            match c["status"].as_str().unwrap_or_default() {
                "SUCCESS" => outcome.passed += 1,
                "SKIPPED" | "INFO" => {}
                other => outcome.bad.push(format!(
                    "{scenario}@{version}: {} {other} {}",
                    c["id"], c["errorMessage"]
                )),
            }
        }
    }
    assert!(!outcomes.is_empty(), "no scenario ran at {version}\n{said}");
    outcomes
}

#[test]
fn the_official_conformance_suite_passes_every_required_server_scenario_of_both_eras() {
    let Some((node, cli)) = suite() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp/conformance");
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    // Loopback without a token, as a local user runs it (the suite sends
    // no token; the token is tests/mcp_sdk.rs's).
    let server = Server::start(dir.path(), &["."], &[]);
    let url = server.url("/mcp");
    let mut bad = Vec::new();
    for (version, required) in [("2025-11-25", REQUIRED_2025), ("2026-07-28", REQUIRED_2026)] {
        let outcomes = run_era(&node, &cli, &url, version);
        let also: Vec<&str> = ALSO
            .iter()
            .filter(|(v, _)| *v == version)
            .map(|(_, s)| *s)
            .collect();
        let mut checks = [0, 0];
        for (i, list) in [required, also.as_slice()].into_iter().enumerate() {
            for scenario in list {
                let Some(o) = outcomes.get(*scenario) else {
                    bad.push(format!("{scenario}@{version}: did not run"));
                    continue;
                };
                if o.passed == 0 {
                    bad.push(format!("{scenario}@{version}: no check passed"));
                }
                checks[i] += o.passed;
                bad.extend(o.bad.iter().cloned());
            }
        }
        eprintln!(
            "{version}: {} required scenarios, {} checks passed; beyond the set {} scenarios, {} checks",
            required.len(),
            checks[0],
            also.len(),
            checks[1]
        );
    }

    assert!(
        bad.is_empty(),
        "checks that did not pass:\n{}",
        bad.join("\n")
    );
}
