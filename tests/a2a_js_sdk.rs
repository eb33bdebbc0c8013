//! Acceptance of A2A 1.0 against the official JavaScript SDK
//! (`@a2a-js/sdk`): its client, run by Node (tests/js/a2a_js_client.mjs
//! does the checking), drives teams served by `troupe serve` through
//! every method, once over JSON-RPC and once over HTTP+JSON: the card, blocking and non-blocking sends (the
//! task seen working, subscribed to from a second client, completed),
//! streaming, GetTask with historyLength, ListTasks with filters and
//! pages, CancelTask, push notification configs, the extended card, and
//! the spec's error codes.
//!
//! The SDK lives under `target/a2a-js` (or `TROUPE_A2A_JS`), put there by
//! `.ci/install-a2a-js.sh`. Without it (or without `node`) the test
//! fails, saying how to install it, unless `TROUPE_ALLOW_SKIP=1` (never in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::serve::Server;
use common::{text, write};

/// The directory holding `node_modules/@a2a-js/sdk`, when it and `node` are there.
fn sdk() -> Option<PathBuf> {
    let dir = std::env::var_os("TROUPE_A2A_JS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/a2a-js"),
        PathBuf::from,
    );
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if node && dir.join("node_modules/@a2a-js/sdk/package.json").exists() {
        return Some(dir);
    }
    common::prereq::missing_a2a_js();
    None
}

#[test]
fn the_js_sdk_client_calls_every_method_over_json_rpc() {
    js_client("JSONRPC");
}

#[test]
fn the_js_sdk_client_calls_every_method_over_http_json() {
    js_client("HTTP+JSON");
}

/// Runs tests/js/a2a_js_client.mjs against a fresh server, its client on `binding`.
fn js_client(binding: &str) {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", common::serve::ASKING);
    write(dir.path(), "slowish.yaml", common::a2a::SLOWISH);
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", "js-token")]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js/a2a_js_client.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(&sdk)
        .args([s.base.as_str(), "js-token", binding])
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{binding}: stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "ok");
}
