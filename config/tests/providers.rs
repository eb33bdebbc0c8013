//! `provider: anthropic` from YAML: a team whose agents use an Anthropic
//! model runs against an in-process server on 127.0.0.1 replaying recorded
//! Messages API answers (`agents/tests/fixtures/anthropic`), through the
//! path a user takes (parse, build, run).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The fake server and fixture replay of troupe-agents' provider tests.
#[allow(dead_code)]
#[path = "../../agents/tests/openai/fake_server.rs"]
mod fake_server;
#[allow(dead_code)]
#[path = "../../agents/tests/replay/mod.rs"]
mod replay;

use std::time::Duration;

use fake_server::FakeOpenAi;
use serde_json::json;
use troupe_config::{BuildOptions, Config};
use troupe_runtime::{RunContext, RunStatus};

#[tokio::test]
async fn a_team_on_an_anthropic_model_runs_against_the_messages_api() {
    let server = FakeOpenAi::start([
        replay::json("anthropic", "calculator_tool_use.json", 200, &[]),
        replay::json("anthropic", "text.json", 200, &[]),
        replay::json(
            "anthropic",
            "rate_limit_429.json",
            429,
            &[("retry-after", "0")],
        ),
        replay::json("anthropic", "text.json", 200, &[]),
    ])
    .await;
    let root = server.base_url.trim_end_matches("/v1");
    // The key variable must be set in the test's environment without
    // touching it: cargo sets CARGO_PKG_NAME for every test it runs.
    let yaml = format!(
        "version: 1
models:
  claude:
    provider: anthropic
    model: claude-sonnet-4-5
    base_url: {root}
    api_key_env: CARGO_PKG_NAME
    headers: {{anthropic-beta: token-efficient-tools-2025-02-19}}
    max_tokens: 1024
    retries: 2
agents:
  researcher:
    model: claude
    instructions: Compute with the calculator.
    tools: [calculator]
  writer:
    model: claude
    instructions: Write it up.
workflow:
  sequential: {{participants: [researcher, writer]}}
"
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        built
            .workflow
            .run_task("What is 6 * 7?", &RunContext::new()),
    )
    .await
    .expect("the run hung")
    .unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let last = result.final_response.as_deref().unwrap();
    assert_eq!(last.text_content(), "Hello! How can I help you today?");

    let requests = server.requests();
    assert_eq!(
        requests.len(),
        4,
        "tool call, answer, a 429 retried, answer"
    );
    for r in &requests {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.headers["x-api-key"], "troupe-config");
        assert_eq!(r.headers["anthropic-version"], "2023-06-01");
        assert_eq!(
            r.headers["anthropic-beta"],
            "token-efficient-tools-2025-02-19"
        );
        assert_eq!(r.body["model"], "claude-sonnet-4-5");
        assert_eq!(r.body["max_tokens"], 1024);
    }
    let first = &requests[0].body;
    assert_eq!(first["system"], "Compute with the calculator.");
    assert_eq!(first["tools"][0]["name"], "calculator");
    // The tool's result goes back as a tool_result block.
    let second = &requests[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        json!([{"type": "tool_result", "tool_use_id": "toolu_01Gx8bVn5QyP3sLk2mWd9Rfa", "content": "42"}])
    );
    // The writer sees the researcher's answer.
    let writer = &requests[3].body;
    assert_eq!(writer["system"], "Write it up.");
    assert!(
        writer["messages"]
            .to_string()
            .contains("How can I help you today?"),
        "{writer}"
    );
}

#[tokio::test]
async fn an_openai_responses_model_runs_from_yaml_and_scripted_options_are_refused() {
    let server = FakeOpenAi::start([replay::json("openai_responses", "text.json", 200, &[])]).await;
    let yaml = format!(
        "version: 1
models:
  gpt: {{provider: openai_responses, model: gpt-4.1, base_url: '{}', api_key_env: CARGO_PKG_NAME}}
agents:
  a: {{model: gpt, instructions: be brief}}
workflow:
  sequential: {{participants: [a]}}
",
        server.base_url
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let result = built
        .workflow
        .run_task("hello", &RunContext::new())
        .await
        .unwrap();
    let last = result.final_response.as_deref().unwrap();
    assert_eq!(last.text_content(), "Hello! How can I help you today?");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.headers["authorization"], "Bearer troupe-config");
    assert_eq!(sent.body["instructions"], "be brief");
    assert_eq!(sent.body["store"], false);

    let e = Config::parse(
        "version: 1
models:
  claude: {provider: anthropic, model: claude-sonnet-4-5, replies: [hi]}
agents:
  a: {model: claude}
workflow:
  sequential: {participants: [a]}
",
        "t.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("models.claude.replies") && e.contains("only used by scripted models"),
        "{e}"
    );
}

/// Azure OpenAI's deployments API through `provider: openai`: the
/// `api-version` query of the base URL stays after the path, and the key
/// goes in an `api-key` header expanded from the environment.
#[tokio::test]
async fn an_azure_style_base_url_keeps_its_query_and_header() {
    let server = FakeOpenAi::start([fake_server::Answer::json(json!({
        "id": "chatcmpl-AzR7", "object": "chat.completion", "model": "gpt-4o-2024-11-20",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi from Azure."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    }))])
    .await;
    let root = server.base_url.trim_end_matches("/v1");
    let yaml = format!(
        "version: 1
models:
  azure:
    provider: openai
    model: gpt-4o
    base_url: '{root}/openai/deployments/gpt-4o?api-version=2024-10-21'
    api_key_env: TROUPE_TEST_UNSET_KEY_VARIABLE
    headers: {{api-key: '${{CARGO_PKG_NAME}}'}}
agents:
  a: {{model: azure}}
workflow:
  sequential: {{participants: [a]}}
"
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let result = built
        .workflow
        .run_task("hello", &RunContext::new())
        .await
        .unwrap();
    let last = result.final_response.as_deref().unwrap();
    assert_eq!(last.text_content(), "Hi from Azure.");
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(sent.headers["api-key"], "troupe-config");
    assert!(sent.headers.get("authorization").is_none());
}
