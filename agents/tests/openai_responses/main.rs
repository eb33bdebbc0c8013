//! The OpenAI Responses client (stateless) against an in-process server
//! replaying recorded wire-format fixtures
//! (`tests/fixtures/openai_responses`): text, streaming, function calls
//! and a whole tool loop, structured output, usage, and error bodies and
//! events (429, 500, 400, `response.failed`, `error`). No test reaches the
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
use troupe_agents::model::{OpenAiResponsesClient, collect_stream};
use troupe_agents::{
    ChatDelta, ChatModel, FinishReason, ModelError, ModelRetryPolicy, ResponseFormat,
    ToolDefinition,
};

const P: &str = "openai_responses";

fn client(server: &FakeOpenAi) -> OpenAiResponsesClient {
    OpenAiResponsesClient::builder("gpt-4.1")
        .base_url(&server.base_url)
        .api_key("sk-test-SECRET")
        .timeout(Duration::from_secs(5))
        .retry(ModelRetryPolicy::new(3, Duration::from_millis(1)).with_jitter(false))
        .build()
        .unwrap()
}

#[tokio::test]
async fn text_answer_with_usage_stateless_on_the_wire() {
    bounded(async {
        let server = FakeOpenAi::start([replay::json(P, "text.json", 200, &[])]).await;
        let mut request = ask("hello");
        request.max_tokens = Some(50);
        let response = client(&server).complete(&request).await.unwrap();
        assert_eq!(response.text_content(), "Hello! How can I help you today?");
        assert_eq!(response.finish_reason, FinishReason::Stop);
        let usage = response.usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (36, 10));
        assert_eq!(response.model.as_deref(), Some("gpt-4.1-2025-04-14"));

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/responses");
        assert_eq!(sent.headers["authorization"], "Bearer sk-test-SECRET");
        assert_eq!(sent.body["model"], "gpt-4.1");
        assert_eq!(sent.body["instructions"], "be brief");
        assert_eq!(
            sent.body["input"],
            json!([{"type": "message", "role": "user", "content": "hello"}])
        );
        assert_eq!(sent.body["store"], false);
        assert_eq!(sent.body["max_output_tokens"], 50);
        assert!(sent.body.get("previous_response_id").is_none());
    })
    .await;
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas_and_ends_with_completed() {
    bounded(async {
        let server = FakeOpenAi::start([replay::sse(P, "text.sse")]).await;
        let stream = client(&server).stream(&ask("hello")).await.unwrap();
        let deltas = drain(stream).await;
        assert_eq!(texts(&deltas), ["Hello", "! How can", " I help?"]);
        assert!(deltas.contains(&ChatDelta::Finish(FinishReason::Stop)));
        assert!(matches!(deltas.last(), Some(ChatDelta::Usage(u)) if u.total() == 48));
        assert_eq!(server.requests()[0].body["stream"], true);
    })
    .await;
}

#[tokio::test]
async fn function_calls_whole_and_streamed_interleaved() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "function_call.json", 200, &[]),
            replay::sse(P, "function_call.sse"),
        ])
        .await;
        let client = client(&server);
        let request = ask("add and multiply").with_tools(vec![ToolDefinition {
            name: "lookup".into(),
            description: "Looks a word up.".into(),
            parameters: json!({"type": "object"}),
        }]);
        let whole = client.complete(&request).await.unwrap();
        assert_eq!(whole.content, None);
        assert_eq!(whole.tool_calls[0].id, "call_Nd7Pq2LmK9sT4vWx");
        assert_eq!(whole.tool_calls[0].arguments, r#"{"q":"troupe"}"#);
        assert_eq!(whole.finish_reason, FinishReason::ToolCalls);
        assert_eq!(whole.usage.map(|u| u.total()), Some(314));

        let streamed = collect_stream(client.stream(&request).await.unwrap())
            .await
            .unwrap();
        let calls: Vec<_> = streamed
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_add_7Hq2", "add", r#"{"a": 1, "b": 2}"#),
                ("call_mul_9Kx4", "mul", r#"{"x": 3}"#),
            ]
        );
        assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
        assert_eq!(streamed.usage.map(|u| u.total()), Some(161));

        let sent = &server.requests()[0].body;
        assert_eq!(
            sent["tools"][0],
            json!({"type": "function", "name": "lookup", "description": "Looks a word up.", "parameters": {"type": "object"}, "strict": false})
        );
    })
    .await;
}

#[tokio::test]
async fn structured_output_asks_text_format_json_schema() {
    bounded(async {
        let server = FakeOpenAi::start([replay::json(P, "structured.json", 200, &[])]).await;
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}}, "required": ["ok", "reason"], "additionalProperties": false});
        let request = ask("judge").with_response_format(ResponseFormat::JsonSchema {
            name: "verdict".into(),
            schema: schema.clone(),
            strict: true,
        });
        let response = client(&server).complete(&request).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(response.text_content()).unwrap();
        assert_eq!(answer, json!({"ok": true, "reason": "all tests pass"}));
        let sent = &server.requests()[0].body;
        assert_eq!(
            sent["text"]["format"],
            json!({"type": "json_schema", "name": "verdict", "schema": schema, "strict": true})
        );
    })
    .await;
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_server_asks() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "rate_limit_429.json", 429, &[("retry-after-ms", "120")]),
            replay::json(P, "text.json", 200, &[]),
        ])
        .await;
        let client = OpenAiResponsesClient::builder("gpt-4.1")
            .base_url(&server.base_url)
            .retry(ModelRetryPolicy::new(2, Duration::from_secs(10)))
            .build()
            .unwrap();
        let started = Instant::now();
        let response = client.complete(&ask("hi")).await.unwrap();
        let waited = started.elapsed();
        assert_eq!(response.text_content(), "Hello! How can I help you today?");
        assert!(waited >= Duration::from_millis(120), "waited {waited:?}");
        assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    })
    .await;
}

#[tokio::test]
async fn server_and_request_errors_name_the_providers_text() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "server_error_500.json", 500, &[]),
            replay::json(P, "server_error_500.json", 500, &[]),
            replay::json(P, "server_error_500.json", 500, &[]),
            replay::json(P, "invalid_request_400.json", 400, &[]),
        ])
        .await;
        check_error_bodies(
            &client(&server),
            "Sorry about that",
            &["invalid_json_schema", "Missing 'reason'", "/v1/responses"],
        )
        .await;
        assert_eq!(server.requests().len(), 4);
    })
    .await;
}

#[tokio::test]
async fn failed_responses_and_error_events_end_the_stream_with_their_text() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::sse(P, "failed.sse"),
            replay::sse(P, "error_event.sse"),
        ])
        .await;
        let client = client(&server);
        let e = collect_stream(client.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap_err();
        assert!(matches!(e, ModelError::Api { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("server_error: The model produced invalid content"),
            "{e}"
        );
        let e = collect_stream(client.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("rate_limit_exceeded: Rate limit reached"),
            "{e}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_chat_agent_runs_its_tool_loop_against_the_responses_api() {
    bounded(async {
        let server = FakeOpenAi::start([
            replay::json(P, "function_call.json", 200, &[]),
            replay::sse(P, "text.sse"),
        ])
        .await;
        let answer = ask_researcher(&researcher(client(&server))).await;
        assert_eq!(answer.text_content(), "Hello! How can I help?");
        assert_eq!(answer.usage.map(|u| u.total()), Some(314 + 48));

        let second = &server.requests()[1].body;
        assert_eq!(second["instructions"], "Use lookup.");
        let input = second["input"].as_array().unwrap();
        assert_eq!(
            input[1],
            json!({"type": "function_call", "call_id": "call_Nd7Pq2LmK9sT4vWx", "name": "lookup", "arguments": "{\"q\":\"troupe\"}"})
        );
        assert_eq!(
            input[2],
            json!({"type": "function_call_output", "call_id": "call_Nd7Pq2LmK9sT4vWx", "output": "troupe = a Rust runtime"})
        );
        assert_eq!(second["tool_choice"], "auto");
        assert_eq!(second["store"], false);
    })
    .await;
}
