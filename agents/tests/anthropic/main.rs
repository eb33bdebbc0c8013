//! The Anthropic Messages client against an in-process server replaying
//! recorded wire-format fixtures (`tests/fixtures/anthropic`): text,
//! streaming, tool calls and a whole tool loop, structured output, usage,
//! and the API's error bodies (429, 529, 500, 400). No test reaches the
//! internet.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Not every test binary uses every part of the shared fake server.
#[allow(dead_code)]
#[path = "../openai/fake_server.rs"]
mod fake_server;
#[path = "../replay/mod.rs"]
mod replay;

use std::time::{Duration, Instant};

use replay::{ask, ask_researcher, bounded, check_error_bodies, drain, researcher, texts};

use fake_server::FakeOpenAi;
use serde_json::json;
use troupe_agents::model::{AnthropicClient, StreamAccumulator, collect_stream};
use troupe_agents::{
    ChatDelta, ChatModel, FinishReason, ModelError, ModelRetryPolicy, ResponseFormat, ToolChoice,
    ToolDefinition,
};

const P: &str = "anthropic";

/// A client of the fake server: its base URL is the server's root (the
/// client adds `/v1/messages`).
fn client(server: &FakeOpenAi) -> AnthropicClient {
    AnthropicClient::builder("claude-sonnet-4-5")
        .base_url(server.base_url.trim_end_matches("/v1"))
        .api_key("sk-ant-test-SECRET")
        .timeout(Duration::from_secs(5))
        .retry(ModelRetryPolicy::new(3, Duration::from_millis(1)).with_jitter(false))
        .build()
        .unwrap()
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("{name}s numbers"),
        parameters: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
    }
}

#[tokio::test]
async fn text_answer_with_usage_and_the_messages_headers() {
    bounded(async {
        let server = FakeOpenAi::start([replay::json(P, "text.json", 200, &[])]).await;
        let client = client(&server);
        let response = client.complete(&ask("hello")).await.unwrap();
        assert_eq!(response.text_content(), "Hello! How can I help you today?");
        assert_eq!(response.finish_reason, FinishReason::Stop);
        let usage = response.usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (21, 12));
        assert_eq!(
            response.model.as_deref(),
            Some("claude-sonnet-4-5-20250929")
        );

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/messages");
        assert_eq!(sent.headers["x-api-key"], "sk-ant-test-SECRET");
        assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
        assert!(sent.headers.get("authorization").is_none());
        assert_eq!(sent.body["model"], "claude-sonnet-4-5");
        assert_eq!(sent.body["system"], "be brief");
        assert_eq!(sent.body["max_tokens"], 4096);
        assert_eq!(
            sent.body["messages"],
            json!([{"role": "user", "content": "hello"}])
        );
    })
    .await;
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas() {
    bounded(async {
        let server = FakeOpenAi::start([replay::sse(P, "text.sse")]).await;
        let mut request = ask("hello");
        request.max_tokens = Some(100);
        let stream = client(&server).stream(&request).await.unwrap();
        let deltas = drain(stream).await;
        assert_eq!(texts(&deltas), ["Hello", "! How can", " I help?"]);
        let mut acc = StreamAccumulator::new();
        deltas.into_iter().for_each(|d| acc.push(d));
        let response = acc.finish();
        assert_eq!(response.finish_reason, FinishReason::Stop);
        let usage = response.usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (25, 15));
        let sent = &server.requests()[0].body;
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["max_tokens"], 100);
    })
    .await;
}

#[tokio::test]
async fn tool_calls_whole_and_streamed() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "tool_use.json", 200, &[]),
            replay::sse(P, "tool_use.sse"),
        ])
        .await;
        let client = client(&server);
        let request = ask("add and multiply")
            .with_tools(vec![tool("add"), tool("mul")])
            .with_tool_choice(ToolChoice::Tool("add".into()));
        let whole = client.complete(&request).await.unwrap();
        assert_eq!(whole.text_content(), "I'll look that up.");
        assert_eq!(whole.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
        assert_eq!(whole.tool_calls[0].arguments, r#"{"q":"troupe"}"#);
        assert_eq!(whole.finish_reason, FinishReason::ToolCalls);

        let streamed = collect_stream(client.stream(&request).await.unwrap())
            .await
            .unwrap();
        assert_eq!(streamed.text_content(), "Let me check both.");
        let calls: Vec<_> = streamed
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "add",
                    r#"{"a": 1, "b": 2}"#
                ),
                ("toolu_01VAmPH8sKqPb8j8NDmfa4Fa", "mul", r#"{"x": 3}"#),
            ]
        );
        assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
        assert_eq!(streamed.usage.map(|u| u.total()), Some(472 + 89));

        let sent = &server.requests()[0].body;
        assert_eq!(sent["tools"][1]["name"], "mul");
        assert_eq!(sent["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(sent["tool_choice"], json!({"type": "tool", "name": "add"}));
    })
    .await;
}

#[tokio::test]
async fn structured_output_comes_back_as_text_whole_and_streamed() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "structured.json", 200, &[]),
            replay::sse(P, "structured.sse"),
        ])
        .await;
        let client = client(&server);
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}}, "required": ["ok", "reason"]});
        let request = ask("judge").with_response_format(ResponseFormat::JsonSchema {
            name: "verdict".into(),
            schema: schema.clone(),
            strict: true,
        });
        let whole = client.complete(&request).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(whole.text_content()).unwrap();
        assert_eq!(answer, json!({"ok": true, "reason": "all tests pass"}));
        assert!(whole.tool_calls.is_empty());
        assert_eq!(whole.finish_reason, FinishReason::Stop);

        let streamed = collect_stream(client.stream(&request).await.unwrap())
            .await
            .unwrap();
        let answer: serde_json::Value = serde_json::from_str(streamed.text_content()).unwrap();
        assert_eq!(answer, json!({"ok": false, "reason": "one test fails"}));
        assert!(streamed.tool_calls.is_empty());
        assert_eq!(streamed.finish_reason, FinishReason::Stop);

        let sent = &server.requests()[0].body;
        assert_eq!(sent["tools"][0]["name"], "verdict");
        assert_eq!(sent["tools"][0]["input_schema"], schema);
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "tool", "name": "verdict"})
        );
    })
    .await;
}

#[tokio::test]
async fn rate_limited_and_overloaded_are_retried_honouring_retry_after() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "rate_limit_429.json", 429, &[("retry-after", "1")]),
            replay::json(P, "overloaded_529.json", 529, &[]),
            replay::json(P, "text.json", 200, &[]),
        ])
        .await;
        // A computed backoff of 10 s would time the test out; the second
        // wait is the policy's own (Anthropic's 529 carries no retry-after).
        let client = AnthropicClient::builder("claude-sonnet-4-5")
            .base_url(server.base_url.trim_end_matches("/v1"))
            .retry(ModelRetryPolicy {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(10),
                max_retry_after: Duration::from_secs(5),
                jitter: false,
                ..ModelRetryPolicy::default()
            })
            .build()
            .unwrap();
        let started = Instant::now();
        let response = client.complete(&ask("hi")).await.unwrap();
        let waited = started.elapsed();
        assert_eq!(response.text_content(), "Hello! How can I help you today?");
        assert_eq!(server.requests().len(), 3);
        assert!(waited >= Duration::from_secs(1), "waited {waited:?}");
    })
    .await;
}

#[tokio::test]
async fn errors_name_the_providers_text_and_only_transient_ones_are_retried() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "api_error_500.json", 500, &[]),
            replay::json(P, "overloaded_529.json", 529, &[]),
            replay::json(P, "api_error_500.json", 500, &[]),
            replay::json(P, "invalid_request_400.json", 400, &[]),
        ])
        .await;
        check_error_bodies(
            &client(&server),
            "Internal server error",
            &["invalid_request_error", "tool_result", "/v1/messages"],
        )
        .await;
        assert_eq!(server.requests().len(), 4);
    })
    .await;
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_it_with_the_error() {
    bounded(async {
        let server = FakeOpenAi::start([replay::sse(P, "stream_overloaded.sse")]).await;
        let mut stream = client(&server).stream(&ask("hi")).await.unwrap();
        let first = futures::StreamExt::next(&mut stream)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first, ChatDelta::Text("Partial".into()));
        let e = futures::StreamExt::next(&mut stream)
            .await
            .unwrap()
            .unwrap_err();
        assert!(matches!(e, ModelError::Api { .. }), "{e:?}");
        assert!(
            e.to_string().contains("overloaded_error: Overloaded"),
            "{e}"
        );
        assert!(futures::StreamExt::next(&mut stream).await.is_none());
    })
    .await;
}

#[tokio::test]
async fn a_chat_agent_runs_its_tool_loop_against_the_messages_api() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "tool_use.json", 200, &[]),
            replay::sse(P, "text.sse"),
        ])
        .await;
        let answer = ask_researcher(&researcher(client(&server))).await;
        assert_eq!(answer.text_content(), "Hello! How can I help?");
        assert_eq!(
            answer.usage.map(|u| u.total()),
            Some(384 + 57 + 25 + 15),
            "both calls' usage"
        );

        // The second request carries the call and its result as blocks.
        let second = &server.requests()[1].body;
        assert_eq!(second["system"], "Use lookup.");
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(
            messages[1]["content"],
            json!([
                {"type": "text", "text": "I'll look that up."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "lookup", "input": {"q": "troupe"}}
            ])
        );
        assert_eq!(
            messages[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "troupe = a Rust runtime"}
            ]})
        );
        assert_eq!(second["tool_choice"], json!({"type": "auto"}));
    })
    .await;
}
