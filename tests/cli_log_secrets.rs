//! No secret in troupe's logs at any level: a token given to an MCP server
//! through `env:` (from a `${VAR}` the config reads) never appears on
//! stderr or stdout, from `--log-level error` to `trace`; and the run's
//! log lines (run start and end, turns, model and tool calls) are there
//! at debug.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{text, troupe, wait, write};

const SECRET: &str = "tok-never-in-a-log-5c2e91";

fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server.py")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn an_mcp_servers_env_secret_is_masked_at_every_log_level() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "mcp.yaml",
        &format!(
            "version: 1\nmodels:\n  m: {{provider: scripted}}\nagents:\n  a:\n    model: m\n    tools:\n      - mcp: {{name: envy, command: python3, args: [{}], env: {{TOKEN: \"${{TROUPE_TEST_TOKEN}}\"}}}}\n    script: [{{tool_call: {{name: env}}}}, done]\nworkflow:\n  sequential:\n    participants: [a]\n",
            server_script()
        ),
    );
    for level in ["error", "warn", "info", "debug", "trace"] {
        let mut cmd = troupe(
            dir.path(),
            &["--log-level", level, "run", cfg.to_str().unwrap(), "go"],
        );
        cmd.env("TROUPE_TEST_TOKEN", SECRET)
            .args(["--events", "jsonl"]);
        let out = wait(cmd.spawn().unwrap(), Duration::from_secs(60));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "at {level}: {stderr}");
        assert!(
            stdout.contains("TOKEN=***"),
            "at {level}: the tool ran: {stdout}"
        );
        for (name, s) in [("stdout", &stdout), ("stderr", &stderr)] {
            if let Some(at) = s.find(SECRET) {
                let from = s[..at].rfind('\n').map_or(0, |i| i + 1);
                panic!(
                    "at {level} the secret is on {name}: {}",
                    &s[from..(at + 200).min(s.len())]
                );
            }
        }
        if level == "debug" {
            for line in [
                "run started",
                "run ended",
                "turn started",
                "turn finished",
                "model call",
                "tool call",
            ] {
                assert!(stderr.contains(line), "'{line}' at debug: {stderr}");
            }
        }
    }
}
