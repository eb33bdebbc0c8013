//! MCP tools against real rmcp servers: a stdio child process (this very
//! test binary, started in server mode) and streamable HTTP on 127.0.0.1.
//!
//! The target has no libtest harness (see Cargo.toml): `main` either serves
//! MCP on stdio, when the environment asks it to, or runs the tests below
//! with a small runner (`mcp_support`).

// No libtest harness, so no function here is a #[test] that clippy would
// recognise: the tests and their helpers may fail loudly all the same.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod mcp_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_support::{http_server, stdio_config, wait_until_reaped};
use serde_json::json;
use troupe_agents::{
    ChatAgent, McpClient, McpError, McpServerConfig, ScriptedModel, ScriptedReply, Tool,
    ToolContext, ToolError,
};
use troupe_runtime::{Agent, Content, Message, RunContext, Thread};

async fn stdio_lists_and_filters_tools() {
    let client = McpClient::connect(stdio_config("local")).await.unwrap();
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(names, ["add", "crash", "env_names", "fail", "pid", "sleep"]);
    let add = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "add")
        .unwrap();
    assert_eq!(add.description, "Adds two integers.");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    client.close().await;

    let client = McpClient::connect(stdio_config("local").allow(["add"]).tool_prefix("calc"))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].definition().name, "calc_add");
    assert_eq!(tools[0].remote_name(), "add");
    let e = client.call_tool("fail", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::NotAllowed { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "MCP server 'local': tool 'fail' is not in the allow-list"
    );
    client.close().await;
}

async fn stdio_calls_tools_and_reports_tool_errors() {
    let client = McpClient::connect(stdio_config("local")).await.unwrap();
    let result = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!((result.text.as_str(), result.is_error), ("42", false));
    let result = client.call_tool("fail", json!({})).await.unwrap();
    assert_eq!(
        (result.text.as_str(), result.is_error),
        ("the tool broke", true)
    );
    let e = client.call_tool("missing", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::Server { .. }), "{e:?}");

    // The same, as tools an agent uses: errors are tool errors.
    let tools = client.tools().await.unwrap();
    let tool = |name: &str| tools.iter().find(|t| t.definition().name == name).unwrap();
    let out = tool("add")
        .call(r#"{"a": 1, "b": 2}"#, ToolContext::detached("c1"))
        .await
        .unwrap();
    assert_eq!(out.content, "3");
    let e = tool("fail")
        .call("{}", ToolContext::detached("c2"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ToolError::Failed(ref t) if t == "the tool broke"),
        "{e}"
    );
    let e = tool("add")
        .call("[1, 2]", ToolContext::detached("c3"))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e}");
    // Arguments the server cannot use: its error text reaches the model.
    let e = tool("add")
        .call(r#"{"a": "x"}"#, ToolContext::detached("c4"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("invalid type: string \"x\""), "{e}");
    // In the model's terms, not Rust's.
    assert!(e.to_string().contains("expected an integer"), "{e}");
    assert!(!e.to_string().contains("i64"), "{e}");
    client.close().await;
}

async fn stdio_server_killed_mid_call_fails_clearly_and_is_reaped() {
    let client = McpClient::connect(stdio_config("doomed").restarts(0))
        .await
        .unwrap();
    let pid = client.process_id().expect("a child process");
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("sleep", json!({"ms": 60_000})).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let e = call.await.unwrap().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the error came late: {:?}",
        started.elapsed()
    );
    assert!(matches!(e, McpError::Disconnected { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("MCP server 'doomed' is gone (tools/call sleep)"),
        "{text}"
    );
    // With no restart allowed, later calls fail at once, naming the
    // server, and the child does not linger as a zombie.
    let e = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Unavailable { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "MCP server 'doomed' exited and is not started again (restarted 0 time(s), as many as allowed): its tools are unavailable"
    );
    assert!(client.is_closed());
    wait_until_reaped(pid).await;
}

async fn stdio_server_crashing_during_a_call() {
    let client = McpClient::connect(stdio_config("fragile").restarts(0))
        .await
        .unwrap();
    let pid = client.process_id().unwrap();
    let e = client.call_tool("crash", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::Disconnected { .. }), "{e:?}");
    wait_until_reaped(pid).await;
}

async fn stdio_hanging_call_times_out_and_the_client_goes_on() {
    let client = McpClient::connect(stdio_config("slow").timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    let started = Instant::now();
    let e = client
        .call_tool("sleep", json!({"ms": 30_000}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        e.to_string(),
        "MCP server 'slow' did not answer tools/call sleep within 300ms"
    );
    let result = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(result.text, "2");
    let pid = client.process_id().unwrap();
    client.close().await;
    wait_until_reaped(pid).await;
}

async fn dropping_the_client_reaps_the_child() {
    let client = McpClient::connect(stdio_config("dropped")).await.unwrap();
    let pid = client.process_id().unwrap();
    drop(client);
    wait_until_reaped(pid).await;
}

async fn a_server_that_cannot_start_or_never_answers() {
    let e = McpClient::connect(McpServerConfig::stdio("ghost", "/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Connect { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("cannot start '/nonexistent/mcp-server'"),
        "{e}"
    );

    // `sleep` reads no MCP: initialization never completes.
    let config = McpServerConfig::stdio("mute", "sleep")
        .arg("30")
        .startup_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let e = McpClient::connect(config).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        e.to_string(),
        "MCP server 'mute' did not answer initialize within 300ms"
    );
}

async fn http_lists_calls_and_reports_tool_errors() {
    let (url, ct, task) = http_server().await;
    let client = McpClient::connect(McpServerConfig::http("remote", &url).header("x-team", "blue"))
        .await
        .unwrap();
    assert_eq!(client.process_id(), None);
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(names, ["add", "crash", "env_names", "fail", "pid", "sleep"]);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 20, "b": 22}))
            .await
            .unwrap()
            .text,
        "42"
    );
    let failed = client.call_tool("fail", json!({})).await.unwrap();
    assert!(failed.is_error && failed.text == "the tool broke");
    client.close().await;
    ct.cancel();
    task.abort();
}

async fn http_server_gone_mid_call_fails_within_the_timeout() {
    let (url, ct, task) = http_server().await;
    let client =
        McpClient::connect(McpServerConfig::http("remote", &url).timeout(Duration::from_secs(2)))
            .await
            .unwrap();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("sleep", json!({"ms": 60_000})).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ct.cancel();
    task.abort();
    let started = Instant::now();
    let e = call.await.unwrap().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(
            e,
            McpError::Disconnected { .. } | McpError::Timeout { .. } | McpError::Server { .. }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("MCP server 'remote'"), "{e}");

    let e = McpClient::connect(
        McpServerConfig::http("nobody", &url).startup_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("MCP server 'nobody'"), "{e}");
}

async fn a_chat_agent_uses_mcp_tools() {
    let client = McpClient::connect(stdio_config("local").allow(["add", "fail"]))
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::tool_calls([("add", json!({"a": 19, "b": 23})), ("fail", json!({}))]),
        ScriptedReply::text("19 + 23 = 42"),
    ]));
    let agent = ChatAgent::builder("mathematician")
        .model(model.clone())
        .tools(client.tools().await.unwrap())
        .build()
        .unwrap();
    assert_eq!(model.requests().len(), 0);
    let thread = Arc::new(Thread::from_messages([Message::user("19 + 23?")]));
    let reply = agent.run(thread, RunContext::new()).await.unwrap();
    assert_eq!(reply.messages()[0].text_content(), "19 + 23 = 42");
    // The tool call and its results stay in the agent's own thread.
    match &reply.private()[1].content {
        Content::ToolResults(r) => {
            assert_eq!((r[0].content.as_str(), r[0].is_error), ("42", false));
            assert_eq!(
                (r[1].content.as_str(), r[1].is_error),
                ("Error: the tool broke", true)
            );
        }
        other => panic!("{other:?}"),
    }
    let tools = &model.requests()[0].tools;
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["add", "fail"]
    );
    client.close().await;
}

const TESTS: &[(&str, mcp_support::Test)] = tests![
    stdio_lists_and_filters_tools,
    stdio_calls_tools_and_reports_tool_errors,
    stdio_server_killed_mid_call_fails_clearly_and_is_reaped,
    stdio_server_crashing_during_a_call,
    stdio_hanging_call_times_out_and_the_client_goes_on,
    dropping_the_client_reaps_the_child,
    a_server_that_cannot_start_or_never_answers,
    http_lists_calls_and_reports_tool_errors,
    http_server_gone_mid_call_fails_within_the_timeout,
    a_chat_agent_uses_mcp_tools,
];

fn main() {
    mcp_support::main(TESTS);
}
