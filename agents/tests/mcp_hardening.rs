//! MCP's safety defaults, against real servers: the minimal environment
//! of a stdio server, its process group killed whole (startup timeout,
//! close), restarts after a crash, the allow-list checked at startup, and
//! secrets masked in what an HTTP server echoes.
//!
//! No libtest harness (see Cargo.toml): the binary is its own stdio MCP
//! server when `mcp_support::SERVE` is set.

// No libtest harness, so no function here is a #[test] that clippy would
// recognise: the tests and their helpers may fail loudly all the same.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod mcp_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mcp_support::{SERVE, stdio_config};
use serde_json::json;
use troupe_agents::{MINIMAL_ENV, McpClient, McpError, McpServerConfig};

/// The names of the server's environment variables.
async fn env_names(client: &McpClient) -> Vec<String> {
    let text = client.call_tool("env_names", json!({})).await.unwrap().text;
    text.split(',').map(str::to_string).collect()
}

async fn a_stdio_server_gets_only_the_minimal_environment_and_what_it_is_given() {
    // Some variable of ours that is not in the minimal set.
    let (ours, _) = std::env::vars()
        .find(|(k, _)| !MINIMAL_ENV.contains(&k.as_str()) && !k.starts_with("LC_"))
        .expect("the test runs with some variable beyond the minimal set");
    let client = McpClient::connect(stdio_config("env").env("GIVEN", "yes"))
        .await
        .unwrap();
    let names = env_names(&client).await;
    for name in &names {
        assert!(
            MINIMAL_ENV.contains(&name.as_str())
                || name.starts_with("LC_")
                || name == SERVE
                || name == "GIVEN",
            "the server got {name}, which nobody passed: {names:?}"
        );
    }
    assert!(names.contains(&"PATH".to_string()), "{names:?}");
    assert!(!names.contains(&ours), "{names:?}");
    client.close().await;

    let client = McpClient::connect(stdio_config("env").inherit_env([ours.clone()]))
        .await
        .unwrap();
    assert!(env_names(&client).await.contains(&ours));
    client.close().await;
}

/// A fresh path in the temporary directory.
fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("troupe-mcp-{}-{name}", std::process::id()))
}

/// The process group id a wrapper wrote into `file` (its `$$`).
async fn written_pgid(file: &PathBuf) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the wrapper wrote no pid");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether any process is left in the group (zombies aside: `kill -0`
/// fails once all are gone and reaped).
fn group_alive(pgid: i32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

async fn wait_group_gone(pgid: i32, within: Duration) {
    let deadline = Instant::now() + within;
    while group_alive(pgid) {
        assert!(
            Instant::now() < deadline,
            "process group {pgid} is still alive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_startup_timeout_kills_the_wrappers_whole_group() {
    let file = temp_path("startup");
    let _ = std::fs::remove_file(&file);
    // `sh` stays (the `; true`), with `sleep` its child: two processes.
    let script = format!("echo $$ > {}; sleep 1000; true", file.display());
    let config = McpServerConfig::stdio("sleeper", "sh")
        .args(["-c", &script])
        .timeout(Duration::from_secs(1));
    let started = Instant::now();
    let e = McpClient::connect(config).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        e.to_string(),
        "MCP server 'sleeper' did not answer initialize within 1s"
    );
    let pgid = written_pgid(&file).await;
    wait_group_gone(pgid, Duration::from_secs(2)).await;
    let _ = std::fs::remove_file(&file);
}

async fn closing_or_dropping_a_client_kills_what_its_server_started() {
    let exe = std::env::current_exe().unwrap();
    for close in [true, false] {
        // A wrapper that leaves a child behind, then becomes the server.
        let config = McpServerConfig::stdio("wrapped", "sh")
            .args(["-c", "sleep 1000 & exec \"$0\"", &exe.to_string_lossy()])
            .env(SERVE, "stdio");
        let client = McpClient::connect(config).await.unwrap();
        let pgid = i32::try_from(client.process_id().unwrap()).unwrap();
        assert!(group_alive(pgid));
        if close {
            client.close().await;
        } else {
            drop(client);
        }
        wait_group_gone(pgid, Duration::from_secs(5)).await;
    }
}

async fn an_allow_list_naming_an_unknown_tool_fails_naming_it() {
    let client = McpClient::connect(stdio_config("local").allow(["add", "subtract"]))
        .await
        .unwrap();
    let e = client.tools().await.unwrap_err();
    assert!(matches!(e, McpError::UnknownTools { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("MCP server 'local' has no tool `subtract`: `tools` names it, but the server offers `add`"),
        "{text}"
    );
    client.close().await;
}

async fn a_crashed_server_is_restarted_once_then_its_tools_fail_by_name() {
    let client = McpClient::connect(stdio_config("fragile")).await.unwrap();
    let pid = |c: &McpClient| {
        let c = c.clone();
        async move { c.call_tool("pid", json!({})).await.unwrap().text }
    };
    let first = pid(&client).await;
    let e = client.call_tool("crash", json!({})).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("MCP server 'fragile' is gone (tools/call crash)")
            && text.ends_with("the server was restarted, so the call may be tried again"),
        "{text}"
    );
    assert!(
        !text.contains("rmcp::") && !text.contains("Transport ["),
        "{text}"
    );
    let second = pid(&client).await;
    assert_ne!(first, second, "the server was not restarted");
    assert_eq!(client.restarts(), 1);

    // A second crash: no restart left.
    let e = client.call_tool("crash", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::Disconnected { .. }), "{e:?}");
    assert!(
        e.to_string()
            .ends_with("it is not started again (restarted 1 time(s), as many as allowed)"),
        "{e}"
    );
    let e = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "MCP server 'fragile' exited and is not started again (restarted 1 time(s), as many as allowed): its tools are unavailable"
    );
}

/// An HTTP server that refuses every request with 401, echoing the
/// `Authorization` header in the body.
async fn echoing_server() -> String {
    use axum::http::{HeaderMap, StatusCode};
    let router = axum::Router::new().fallback(|headers: HeaderMap| async move {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        (
            StatusCode::UNAUTHORIZED,
            format!("invalid credentials: {auth}"),
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/mcp")
}

async fn a_header_secret_echoed_by_an_http_server_is_masked() {
    let secret = "mcp-header-secret-4d1f9a";
    let url = echoing_server().await;
    let e = McpClient::connect(
        McpServerConfig::http("remote", format!("{url}?token=url-secret-77c2"))
            .bearer_token(secret)
            .timeout(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("MCP server 'remote'"), "{text}");
    assert!(
        !text.contains(secret) && !text.contains("url-secret-77c2"),
        "{text}"
    );
    // The server's echo is there, masked.
    assert!(text.contains("token=***"), "{text}");
    assert!(text.contains("invalid credentials: ***"), "{text}");
}

async fn closing_after_a_timed_out_call_kills_the_hung_server_at_once() {
    let exe = std::env::current_exe().unwrap();
    // A server that ignores SIGTERM, as a hung one may.
    let config = McpServerConfig::stdio("hung", "sh")
        .args(["-c", "trap '' TERM; exec \"$0\"", &exe.to_string_lossy()])
        .env(SERVE, "stdio")
        .timeout(Duration::from_millis(300))
        .startup_timeout(Duration::from_secs(10));
    let client = McpClient::connect(config).await.unwrap();
    let pid = client.process_id().unwrap();
    let e = client
        .call_tool("sleep", json!({"ms": 60_000}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Timeout { .. }), "{e}");
    let started = Instant::now();
    client.close().await;
    let took = started.elapsed();
    // A server that answered nothing in time is killed, not asked to
    // exit and waited for (rmcp waits seconds for a graceful exit).
    assert!(took < Duration::from_millis(1_500), "closing took {took:?}");
    mcp_support::wait_until_reaped(pid).await;
}

const TESTS: &[(&str, mcp_support::Test)] = tests![
    closing_after_a_timed_out_call_kills_the_hung_server_at_once,
    a_stdio_server_gets_only_the_minimal_environment_and_what_it_is_given,
    a_startup_timeout_kills_the_wrappers_whole_group,
    closing_or_dropping_a_client_kills_what_its_server_started,
    an_allow_list_naming_an_unknown_tool_fails_naming_it,
    a_crashed_server_is_restarted_once_then_its_tools_fail_by_name,
    a_header_secret_echoed_by_an_http_server_is_masked,
];

fn main() {
    mcp_support::main(TESTS);
}
