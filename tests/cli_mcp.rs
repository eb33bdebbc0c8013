//! MCP servers and secrets as a user meets them: YAML and the `troupe`
//! binary. A stdio server sees only the environment it is given; one that
//! hangs at startup is killed with its whole process group within the
//! timeout; an allow-list naming a tool the server lacks fails at startup;
//! a crashed server is restarted once; and secrets from the environment
//! (header values, keys in `base_url`, the API key) never reach stderr or
//! the events, even when a server echoes them. And a failed tool call
//! reaches the model as a sentence without Rust type names.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

mod common;
use common::wait;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

/// The stdio MCP server the configs start (python3, no SDK).
fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server.py")
        .to_string_lossy()
        .into_owned()
}

/// A config of one agent `a` whose script is `script` (YAML flow list)
/// and whose one tool entry is the MCP server `mcp` (YAML flow mapping).
fn config(dir: &Path, mcp: &str, script: &str) -> PathBuf {
    let body = format!(
        "version: 1\nmodels:\n  m: {{provider: scripted}}\nagents:\n  a:\n    model: m\n    tools:\n      - mcp: {mcp}\n    script: {script}\nworkflow:\n  sequential:\n    participants: [a]\n"
    );
    let path = dir.join("mcp.yaml");
    std::fs::write(&path, body).expect("write config");
    path
}

/// `troupe run --events jsonl FILE go`, with `env` added.
fn run(file: &Path, env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new(TROUPE);
    cmd.args(["run", "--events", "jsonl"])
        .arg(file)
        .arg("go")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    wait(cmd.spawn().expect("start troupe"), limit)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `content` of every `tool_result` event, in order.
fn tool_results(out: &Output) -> Vec<(String, bool)> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| {
            (
                e["result"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["result"]["is_error"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_stdio_server_sees_no_api_key_but_what_inherit_env_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(
        dir.path(),
        &format!(
            "{{name: envy, command: python3, args: [{}], inherit_env: [TROUPE_TEST_PASSED], env: {{SET_HERE: yes, TOKEN: \"${{TROUPE_TEST_TOKEN}}\"}}}}",
            server_script()
        ),
        "[{tool_call: {name: env}}, {tool_call: {name: log}}, done]",
    );
    let out = run(
        &file,
        &[
            ("OPENAI_API_KEY", "sk-must-not-reach-the-server"),
            ("TROUPE_TEST_PASSED", "visible"),
            ("TROUPE_TEST_NOT_PASSED", "hidden"),
            ("TROUPE_TEST_TOKEN", "tok-given-to-the-server-81f3"),
        ],
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let results = tool_results(&out);
    assert_eq!(results.len(), 2, "{results:?}");
    let env = &results[0].0;
    assert!(env.contains("TROUPE_TEST_PASSED=visible"), "{env}");
    assert!(env.contains("SET_HERE=yes"), "{env}");
    // The token it was given (read from the environment) is masked in
    // what it answers and in what it logs on stderr.
    assert!(env.contains("TOKEN=***"), "{env}");
    assert!(err.contains("fixture: my token is ***"), "{err}");
    assert!(!err.contains("tok-given-to-the-server-81f3"), "{err}");
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
    assert!(!env.contains("TROUPE_TEST_NOT_PASSED"), "{env}");
    assert!(!text(&out.stdout).contains("sk-must-not-reach-the-server"));
}

/// Whether any process is left in the group.
fn group_alive(pgid: &str) -> bool {
    Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status()
        .expect("run kill")
        .success()
}

#[test]
fn a_server_that_never_starts_fails_in_time_and_leaves_no_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pgid");
    // `$$$$` is `$$` once the config's `$$` escapes are read; the `; true`
    // keeps `sh` as a parent of `sleep`, as `npx` or `uvx` would be.
    // `sleep` lets go of troupe's stderr, so a leaked one fails the check
    // below rather than hold the test's pipe open.
    let file = config(
        dir.path(),
        &format!(
            "{{name: sleeper, command: sh, args: [-c, 'echo $$$$ > {}; sleep 1000 2>/dev/null; true'], timeout: 2s}}",
            pid_file.display()
        ),
        "[done]",
    );
    let started = Instant::now();
    let out = run(&file, &[], Duration::from_secs(20));
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        err.contains("MCP server 'sleeper' did not answer initialize within 2s"),
        "{err}"
    );
    let pgid = std::fs::read_to_string(&pid_file).expect("the wrapper wrote its pid");
    let pgid = pgid.trim();
    let deadline = Instant::now() + Duration::from_secs(2);
    while group_alive(pgid) {
        assert!(Instant::now() < deadline, "process group {pgid} survived");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_allow_list_naming_a_missing_tool_fails_at_startup_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(
        dir.path(),
        &format!(
            "{{name: fixture, command: python3, args: [{}], tools: [env, read_mail]}}",
            server_script()
        ),
        "[done]",
    );
    let out = run(&file, &[], Duration::from_secs(30));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("MCP server 'fixture' has no tool `read_mail`: `tools` names it, but the server offers `env`, `pid`, `crash`"),
        "{err}"
    );
}

#[test]
fn a_crashed_server_is_restarted_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(
        dir.path(),
        &format!(
            "{{name: fragile, command: python3, args: [{}]}}",
            server_script()
        ),
        "[{tool_call: {name: pid}}, {tool_call: {name: crash}}, {tool_call: {name: pid}}, {tool_call: {name: crash}}, {tool_call: {name: pid}}, done]",
    );
    let out = run(&file, &[], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&out);
    assert_eq!(results.len(), 5, "{results:?}");
    let (first, second) = (&results[0], &results[2]);
    assert!(!first.1 && !second.1, "{results:?}");
    assert_ne!(
        first.0, second.0,
        "the server was not restarted: {results:?}"
    );
    assert!(
        results[1].1
            && results[1]
                .0
                .starts_with("Error: MCP server 'fragile' is gone (tools/call crash)")
            && results[1]
                .0
                .ends_with("the server was restarted, so the call may be tried again"),
        "{results:?}"
    );
    assert!(
        results[3].1 && results[3].0.contains("it is not started again"),
        "{results:?}"
    );
    assert_eq!(
        results[4],
        (
            "Error: MCP server 'fragile' exited and is not started again (restarted 1 time(s), as many as allowed): its tools are unavailable".to_string(),
            true
        )
    );
    // What the model sees names no Rust type.
    for (content, _) in &results {
        assert!(
            !content.contains("rmcp::") && !content.contains("Transport ["),
            "{content}"
        );
    }
}

/// An OpenAI-compatible endpoint on 127.0.0.1 that refuses every request
/// with 400, echoing the request line and every header in the body.
fn echoing_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut seen = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                seen.push_str(line.trim_end());
                seen.push_str(" | ");
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let reply = serde_json::json!({"error": {"message": format!("bad request: {seen}")}})
                .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    url
}

#[test]
fn secrets_echoed_by_a_model_server_are_masked_in_stderr_and_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = echoing_endpoint();
    let body = format!(
        "version: 1\nmodels:\n  m:\n    provider: openai\n    model: fake\n    base_url: \"{url}?key=${{TROUPE_TEST_GATEWAY_KEY}}\"\n    api_key_env: TROUPE_TEST_API_KEY\n    headers: {{x-team: \"${{TROUPE_TEST_HEADER}}\"}}\n    retries: 1\nagents:\n  a: {{model: m}}\nworkflow:\n  sequential:\n    participants: [a]\n"
    );
    let file = dir.path().join("model.yaml");
    std::fs::write(&file, body).expect("write config");
    let secrets = [
        ("TROUPE_TEST_GATEWAY_KEY", "gw-key-5be1c0"),
        ("TROUPE_TEST_API_KEY", "sk-api-key-93aa17"),
        ("TROUPE_TEST_HEADER", "hdr-secret-0c4e22"),
    ];
    let out = run(&file, &secrets, Duration::from_secs(30));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The server did echo them, masked: the request line, the bearer token
    // and the header all came back.
    assert!(stderr.contains("HTTP 400"), "{stderr}");
    assert!(stderr.contains("/chat/completions?key=***"), "{stderr}");
    assert!(stderr.contains("authorization: Bearer ***"), "{stderr}");
    // `x-team` is no credential by its name: masked because its value
    // came from the environment.
    assert!(stderr.contains("x-team: ***"), "{stderr}");
    let finished = stdout
        .lines()
        .find(|l| l.contains("\"type\":\"run_finished\""))
        .expect("a run_finished event");
    assert!(finished.contains("key=***"), "{finished}");
    for (_, secret) in secrets {
        assert!(!stderr.contains(secret), "{secret} in stderr: {stderr}");
        assert!(!stdout.contains(secret), "{secret} in the events: {stdout}");
    }
}

#[test]
fn stdio_only_settings_on_an_http_server_are_located_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(
        dir.path(),
        "{url: \"http://127.0.0.1:9/mcp\", inherit_env: [HOME], restarts: 2}",
        "[done]",
    );
    let file_name = file.to_string_lossy().into_owned();
    let out = wait(
        Command::new(TROUPE)
            .args(["validate", &file_name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start troupe"),
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "field `agents.a.tools[0].mcp`: `args`, `env`, `inherit_env` and `restarts` are for stdio servers (`command`)"
        ),
        "{err}"
    );

    let file = config(
        dir.path(),
        "{command: python3, inherit_env: [\"NOT A NAME\"]}",
        "[done]",
    );
    let out = wait(
        Command::new(TROUPE)
            .arg("validate")
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start troupe"),
        Duration::from_secs(30),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `agents.a.tools[0].mcp.inherit_env[0]`: `NOT A NAME` is not an environment variable name"),
        "{err}"
    );
}

#[test]
fn a_second_ctrl_c_kills_the_servers_whole_group_before_exiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pgid");
    // A wrapper that leaves a child of its own, then becomes the server.
    let mcp = format!(
        "{{name: wrapped, command: sh, args: [-c, 'echo $$$$ > {}; sleep 1000 2>/dev/null & exec python3 {}']}}",
        pid_file.display(),
        server_script()
    );
    let body = format!(
        "version: 1\nmodels:\n  slow: {{provider: scripted, delay: 60s, replies: [never]}}\nagents:\n  a:\n    model: slow\n    tools:\n      - mcp: {mcp}\nworkflow:\n  sequential:\n    participants: [a]\n"
    );
    let file = dir.path().join("slow.yaml");
    std::fs::write(&file, body).expect("write config");
    let mut child = Command::new(TROUPE)
        .args(["run", "--events", "jsonl"])
        .arg(&file)
        .arg("go")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start troupe");
    // Wait until the agent is thinking (the server is up by then).
    let stdout = child.stdout.take().expect("stdout");
    let started = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("\"agent_started\""))
    })
    .join()
    .expect("reader");
    assert!(started, "the agent never started");
    let pgid = std::fs::read_to_string(&pid_file).expect("the wrapper wrote its pid");
    let pgid = pgid.trim().to_string();
    assert!(group_alive(&pgid));

    for _ in 0..2 {
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = wait(child, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(2);
    while group_alive(&pgid) {
        assert!(
            Instant::now() < deadline,
            "process group {pgid} survived troupe"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn tool_errors_the_model_sees_name_no_rust_type() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "version: 1\nmodels:\n  m: {provider: scripted}\nagents:\n  a:\n    model: m\n    tools: [calculator]\n    script:\n      - tool_call: {name: calculator, arguments: \"2 + 2\"}\n      - tool_call: {name: calculator, arguments: {expression: 4}}\n      - done\nworkflow:\n  sequential:\n    participants: [a]\n";
    let file = dir.path().join("calc.yaml");
    std::fs::write(&file, body).expect("write config");
    let out = run(&file, &[], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&out);
    assert_eq!(
        results,
        [
            (
                "Error: invalid arguments for tool 'calculator': invalid type: string \"2 + 2\", expected an object".to_string(),
                true
            ),
            (
                "Error: invalid arguments for tool 'calculator': invalid type: integer `4`, expected a string".to_string(),
                true
            ),
        ]
    );
}
