//! The OpenAI-compatible client against an in-process fake server speaking
//! the real wire format (no test reaches the internet).

// Test helpers, and the fake server (a module of this file), may fail
// loudly: a server that cannot bind or answer is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fake_server;
mod streaming;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_server::{Answer, FakeOpenAi, Piece};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use troupe_agents::model::collect_stream;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatDelta, ChatMessage, ChatModel, ChatRequest, FinishReason, FunctionTool,
    ModelError, ModelRetryPolicy, OpenAiClient, ResponseFormat, ToolChoice, ToolDefinition,
};
use troupe_runtime::{Agent, AgentError, Content, Message, RunContext, Thread};

/// Every test is bounded: a hang is a failure, not a stuck suite.
pub(crate) async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the test hung")
}

fn client(server: &FakeOpenAi) -> OpenAiClient {
    OpenAiClient::builder("fake-model")
        .base_url(&server.base_url)
        .api_key("sk-test-SECRET")
        .timeout(Duration::from_secs(5))
        .retry(ModelRetryPolicy::new(3, Duration::from_millis(1)).with_jitter(false))
        .build()
        .unwrap()
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("be brief"),
        ChatMessage::user(text),
    ])
}

#[tokio::test]
async fn json_completion_with_tools_on_the_wire() {
    bounded(async {
        let server = FakeOpenAi::start([Answer::json(json!({
            "id": "x", "object": "chat.completion", "model": "fake-model-0613",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"rust\"}"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
        }))])
        .await;
        let request = ask("look it up")
            .with_tools(vec![ToolDefinition {
                name: "lookup".into(),
                description: "Looks things up".into(),
                parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            }])
            .with_tool_choice(ToolChoice::Required)
            .with_response_format(ResponseFormat::JsonSchema {
                name: "answer".into(),
                schema: json!({"type": "object"}),
                strict: false,
            });
        let response = client(&server).complete(&request).await.unwrap();
        assert_eq!(response.content, None);
        assert_eq!(response.tool_calls[0].id, "call_a");
        assert_eq!(response.tool_calls[0].arguments, "{\"q\":\"rust\"}");
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage.map(|u| u.total()), Some(19));
        assert_eq!(response.model.as_deref(), Some("fake-model-0613"));

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/chat/completions");
        assert_eq!(sent.headers["authorization"], "Bearer sk-test-SECRET");
        assert_eq!(sent.headers["content-type"], "application/json");
        assert_eq!(sent.body["model"], "fake-model");
        assert_eq!(sent.body["messages"][0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(sent.body["tools"][0]["function"]["name"], "lookup");
        assert_eq!(sent.body["tool_choice"], "required");
        assert_eq!(sent.body["response_format"]["json_schema"]["name"], "answer");
        assert!(sent.body.get("stream").is_none());
    })
    .await;
}

#[tokio::test]
async fn lenient_json_missing_usage_empty_finish_reason() {
    bounded(async {
        let server = FakeOpenAi::start([Answer::json(json!({
            "choices": [{"message": {"content": "hi"}, "finish_reason": ""}]
        }))])
        .await;
        let response = client(&server).complete(&ask("hello")).await.unwrap();
        assert_eq!(response.text_content(), "hi");
        assert_eq!(response.finish_reason, FinishReason::Unspecified);
        assert_eq!(response.usage, None);
    })
    .await;
}

#[tokio::test]
async fn sse_stream_with_tool_call_deltas_split_over_chunks() {
    bounded(async {
        // Two tool calls, interleaved; their arguments arrive in pieces, and
        // the network splits one SSE event in the middle of its JSON.
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let events = [
            chunk(json!({"role": "assistant", "content": null}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\": 1"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "mul", "arguments": "{\"x\""}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ", \"b\": 2}"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": ": 3}"}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
            json!({"id": "s", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9}}),
        ];
        let mut pieces = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let event = format!("data: {e}\n\n");
            if i == 2 {
                let (a, b) = event.split_at(event.len() / 2);
                pieces.push(Piece::Raw(a.to_string()));
                pieces.push(Piece::Raw(b.to_string()));
            } else {
                pieces.push(Piece::Raw(event));
            }
        }
        pieces.push(Piece::Raw(": keep-alive comment\n\ndata: [DONE]\n\n".into()));
        let server = FakeOpenAi::start([Answer::Stream {
            pieces,
            gap: Duration::from_millis(1),
        }])
        .await;
        let client = client(&server);
        let mut stream = client.stream(&ask("add and multiply")).await.unwrap();
        let mut deltas = Vec::new();
        while let Some(d) = stream.next().await {
            deltas.push(d.unwrap());
        }
        assert!(
            deltas.iter().filter(|d| matches!(d, ChatDelta::ToolCall(_))).count() >= 5,
            "the deltas come as they arrive: {deltas:?}"
        );
        let mut acc = troupe_agents::model::StreamAccumulator::new();
        deltas.into_iter().for_each(|d| acc.push(d));
        let response = acc.finish();
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!((response.tool_calls[0].name.as_str(), response.tool_calls[0].arguments.as_str()), ("add", "{\"a\": 1, \"b\": 2}"));
        assert_eq!((response.tool_calls[1].id.as_str(), response.tool_calls[1].arguments.as_str()), ("call_2", "{\"x\": 3}"));
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage.map(|u| u.completion_tokens), Some(9));

        let sent = &server.requests()[0];
        assert_eq!(sent.body["stream"], true);
        assert_eq!(sent.body["stream_options"]["include_usage"], true);
    })
    .await;
}

#[tokio::test]
async fn sse_text_stream_and_a_server_that_ignores_stream_true() {
    bounded(async {
        let text = |t: &str| json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]});
        let server = FakeOpenAi::start([
            Answer::sse(&[text("Hel"), text("lo"), json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})]),
            Answer::json(json!({"choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}]})),
        ])
        .await;
        let client = client(&server);
        let response = collect_stream(client.stream(&ask("hi")).await.unwrap()).await.unwrap();
        assert_eq!(response.text_content(), "Hello");
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert_eq!(response.usage, None, "no usage chunk: none reported");
        let response = collect_stream(client.stream(&ask("hi")).await.unwrap()).await.unwrap();
        assert_eq!(response.text_content(), "whole");
    })
    .await;
}

#[tokio::test]
async fn a_429_then_success_honours_retry_after() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::Whole {
                status: 429,
                headers: vec![("retry-after-ms", "150".into())],
                body: r#"{"error": {"message": "slow down"}}"#.into(),
            },
            Answer::json(
                json!({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}),
            ),
        ])
        .await;
        // A computed backoff of 10 s would time the test out: only the
        // server's 150 ms can make it pass quickly.
        let client = OpenAiClient::builder("m")
            .base_url(&server.base_url)
            .retry(ModelRetryPolicy::new(2, Duration::from_secs(10)))
            .build()
            .unwrap();
        let started = Instant::now();
        let response = client.complete(&ask("hi")).await.unwrap();
        let waited = started.elapsed();
        assert_eq!(response.text_content(), "ok");
        assert_eq!(server.requests().len(), 2);
        assert!(waited >= Duration::from_millis(150), "waited {waited:?}");
        assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    })
    .await;
}

#[tokio::test]
async fn a_500_three_times_fails_clearly() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::status(500, "upstream exploded"),
            Answer::status(502, "bad gateway"),
            Answer::status(500, "upstream exploded again"),
            Answer::json(json!({"choices": [{"message": {"content": "too late"}}]})),
        ])
        .await;
        let e = client(&server).complete(&ask("hi")).await.unwrap_err();
        assert_eq!(server.requests().len(), 3, "three attempts, no more");
        match &e {
            ModelError::RetriesExhausted { attempts, last, .. } => {
                assert_eq!(*attempts, 3);
                assert!(matches!(**last, ModelError::Status { status: 500, .. }));
            }
            other => panic!("expected RetriesExhausted, got {other:?}"),
        }
        let text = e.to_string();
        assert!(text.contains("after 3 attempts"), "{text}");
        assert!(text.contains("HTTP 500"), "{text}");
        assert!(text.contains("upstream exploded again"), "{text}");
        assert!(
            text.contains(&format!("{}/chat/completions", server.base_url)),
            "{text}"
        );
        // For an agent, a retried-and-failed call may pass later: transient.
        assert_eq!(
            AgentError::from(e).kind(),
            troupe_runtime::ErrorKind::Transient
        );
    })
    .await;
}

#[tokio::test]
async fn a_malformed_body_is_a_clear_error_and_not_retried() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::Whole {
                status: 200,
                headers: vec![("content-type", "application/json".into())],
                body: "<html>gateway page</html>".into(),
            },
            Answer::json(json!({"choices": []})),
        ])
        .await;
        let client = client(&server);
        let e = client.complete(&ask("hi")).await.unwrap_err();
        assert!(matches!(e, ModelError::Decode { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("<html>gateway page</html>") && text.contains("/chat/completions"),
            "{text}"
        );
        assert_eq!(server.requests().len(), 1);
        let e = client.complete(&ask("hi")).await.unwrap_err();
        assert!(e.to_string().contains("no choices"), "{e}");
        assert_eq!(AgentError::from(e).kind(), troupe_runtime::ErrorKind::Model);
    })
    .await;
}

#[tokio::test]
async fn the_api_key_never_shows_in_errors() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::status(
                401,
                r#"{"error": {"message": "Incorrect API key provided: sk-test-SECRET"}}"#,
            ),
            Answer::json(json!({"error": {"message": "key sk-test-SECRET is over quota"}})),
        ])
        .await;
        let client = client(&server);
        let e = client.complete(&ask("hi")).await.unwrap_err();
        assert!(
            matches!(e, ModelError::Status { status: 401, .. }),
            "401 is not retried: {e:?}"
        );
        for shown in [e.to_string(), format!("{e:?}"), format!("{client:?}")] {
            assert!(!shown.contains("SECRET"), "{shown}");
        }
        assert!(
            e.to_string().contains("Incorrect API key provided: ***"),
            "{e}"
        );
        let e = client.complete(&ask("hi")).await.unwrap_err();
        assert!(matches!(e, ModelError::Api { .. }), "{e:?}");
        assert!(!e.to_string().contains("SECRET"), "{e}");
    })
    .await;
}

#[tokio::test]
async fn custom_headers_and_no_key() {
    bounded(async {
        let server = FakeOpenAi::start([Answer::json(
            json!({"choices": [{"message": {"content": "ok"}}]}),
        )])
        .await;
        let client = OpenAiClient::builder("m")
            .base_url(format!("{}/", server.base_url))
            .header("x-tenant", "blue")
            .build()
            .unwrap();
        client.complete(&ask("hi")).await.unwrap();
        let sent = &server.requests()[0];
        assert_eq!(sent.headers["x-tenant"], "blue");
        assert!(sent.headers.get("authorization").is_none());
    })
    .await;
}

#[tokio::test]
async fn a_hanging_server_times_out_and_an_absent_one_is_retried() {
    bounded(async {
        let server = FakeOpenAi::start([Answer::Hang, Answer::Hang]).await;
        let client = OpenAiClient::builder("m")
            .base_url(&server.base_url)
            .timeout(Duration::from_millis(200))
            .retry(ModelRetryPolicy::new(2, Duration::from_millis(1)))
            .build()
            .unwrap();
        let started = Instant::now();
        let e = client.complete(&ask("hi")).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(e.to_string().contains("did not answer within 200ms"), "{e}");
        assert_eq!(server.requests().len(), 2);

        // Nothing listens on this port any more.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let client = OpenAiClient::builder("m")
            .base_url(format!("http://127.0.0.1:{port}/v1"))
            .retry(ModelRetryPolicy::new(2, Duration::from_millis(1)))
            .build()
            .unwrap();
        let e = client.complete(&ask("hi")).await.unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("cannot reach") && text.contains("after 2 attempts"),
            "{text}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_stream_cut_off_midway_or_garbled_ends_with_an_error() {
    bounded(async {
        let text = json!({"choices": [{"index": 0, "delta": {"content": "partial"}}]});
        let server = FakeOpenAi::start([
            Answer::Stream {
                pieces: vec![Piece::Raw(format!("data: {text}\n\n")), Piece::Break],
                gap: Duration::from_millis(1),
            },
            Answer::Stream {
                pieces: vec![Piece::Raw("data: {not json\n\n".into())],
                gap: Duration::from_millis(1),
            },
            Answer::Stream {
                pieces: vec![Piece::Raw(
                    "data: {\"error\": {\"message\": \"model overloaded\"}}\n\n".into(),
                )],
                gap: Duration::from_millis(1),
            },
        ])
        .await;
        let client = client(&server);
        let mut stream = client.stream(&ask("hi")).await.unwrap();
        assert_eq!(
            stream.next().await.unwrap().unwrap(),
            ChatDelta::Text("partial".into())
        );
        let e = stream.next().await.unwrap().unwrap_err();
        assert!(matches!(e, ModelError::Stream { .. }), "{e:?}");
        assert!(stream.next().await.is_none());

        let e = collect_stream(client.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(e, ModelError::Decode { .. }) && e.to_string().contains("{not json"),
            "{e}"
        );
        let e = collect_stream(client.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("model overloaded"), "{e}");
    })
    .await;
}

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    q: String,
}

#[tokio::test]
async fn a_chat_agent_runs_its_tool_loop_against_the_server() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::json(json!({"choices": [{"message": {"content": "Let me check.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"troupe\"}"}}
            ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
            Answer::sse(&[
                json!({"choices": [{"index": 0, "delta": {"content": "troupe is "}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": "a runtime."}, "finish_reason": "stop"}]}),
                json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 4}}),
            ]),
        ])
        .await;
        let agent = ChatAgent::builder("researcher")
            .instructions("Use lookup.")
            .model(client(&server))
            .tool(FunctionTool::new("lookup", "Looks a word up.", |l: Lookup| async move {
                Ok::<_, String>(format!("{} = a Rust runtime for agent teams", l.q))
            }))
            .streaming(true)
            .build()
            .unwrap();
        let thread = Arc::new(Thread::from_messages([Message::user("What is troupe?")]));
        let reply = agent.run(thread, RunContext::new()).await.unwrap();
        assert_eq!(reply.messages().len(), 1);
        assert_eq!(reply.messages()[0].text_content(), "troupe is a runtime.");
        assert_eq!(reply.messages()[0].usage.map(|u| u.total()), Some(15 + 34), "both calls' usage");
        // The tool call and its result stay in the agent's own thread.
        assert!(matches!(&reply.private()[1].content, Content::ToolResults(r) if r[0].content.contains("Rust runtime")));

        let second = &server.requests()[1].body;
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[2]["role"], "assistant");
        assert_eq!(messages[2]["content"], "Let me check.");
        assert_eq!(messages[2]["tool_calls"][0]["id"], "c1");
        assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "c1", "content": "troupe = a Rust runtime for agent teams"}));
        assert_eq!(second["tool_choice"], "auto");
    })
    .await;
}
