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

/// A chat-completions server on 127.0.0.1 that answers every request with
/// a tool-less answer and keeps each request's `Authorization` header;
/// its base URL and the headers.
fn keyed_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(n) = lower.strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("authorization:") {
                    keep.lock().unwrap().push(line.trim().to_string());
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let reply = "{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"served\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"served answer\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"total_tokens\":12}}";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

const KEY: &str = "sk-key-never-in-a-log-8d41a7";

#[test]
fn an_api_key_and_an_mcp_env_secret_are_masked_at_every_log_level() {
    let (url, seen) = keyed_server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "keyed.yaml",
        &format!(
            "version: 1\nmodels:\n  s: {{provider: scripted}}\n  remote:\n    provider: openai\n    model: served\n    base_url: {url}\n    api_key_env: TROUPE_TEST_API_KEY\n    stream: false\nagents:\n  tooler:\n    model: s\n    tools:\n      - mcp: {{name: envy, command: python3, args: [{}], env: {{TOKEN: \"${{TROUPE_TEST_TOKEN}}\"}}}}\n    script: [{{tool_call: {{name: env}}}}, {{tool_call: {{name: log}}}}, done]\n  caller:\n    model: remote\nworkflow:\n  sequential:\n    participants: [tooler, caller]\n",
            server_script()
        ),
    );
    for level in ["trace", "debug", "info", "warn", "error"] {
        let before = seen.lock().unwrap().len();
        let mut cmd = troupe(
            dir.path(),
            &["--log-level", level, "run", cfg.to_str().unwrap(), "go"],
        );
        cmd.env("TROUPE_TEST_TOKEN", SECRET)
            .env("TROUPE_TEST_API_KEY", KEY)
            .env("RUST_LOG", level)
            .args(["--events", "jsonl"]);
        let out = wait(cmd.spawn().unwrap(), Duration::from_secs(60));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "at {level}: {stderr}");
        // Both secrets were used: the tool ran with the token, and the
        // server got the key.
        assert!(stdout.contains("TOKEN=***"), "at {level}: {stdout}");
        assert!(stdout.contains("served answer"), "at {level}: {stdout}");
        let headers = seen.lock().unwrap()[before..].to_vec();
        assert!(
            headers
                .iter()
                .any(|h| h.ends_with(&format!("Bearer {KEY}"))),
            "at {level}: the key was not sent: {headers:?}"
        );
        for secret in [SECRET, KEY] {
            for (name, s) in [("stdout", &stdout), ("stderr", &stderr)] {
                if let Some(at) = s.find(secret) {
                    let from = s[..at].rfind('\n').map_or(0, |i| i + 1);
                    panic!(
                        "at {level} a secret is on {name}: {}",
                        &s[from..(at + 200).min(s.len())]
                    );
                }
            }
        }
    }
}
