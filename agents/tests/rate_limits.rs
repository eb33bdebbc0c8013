//! Shared rate limits, retries, fallbacks and cut-off answers, through the
//! Rust API a user takes: `ChatAgent`s on `OpenAiClient`s built with
//! `rate_limit`, against an in-process server on 127.0.0.1 that enforces a
//! limit of its own (429 with `Retry-After` beyond 10 requests in any
//! second), and `FallbackModel` / `OnLength` over scripted models.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use troupe_agents::model::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, FallbackModel, FinishReason, RateLimit,
};
use troupe_agents::{
    CONTINUE_PROMPT, ChatAgent, ModelError, OnLength, OpenAiClient, ScriptedModel, ScriptedReply,
};
use troupe_runtime::{Agent, AgentError, Event, Message, RunContext, Thread};

/// A server allowing `per_second` requests in any sliding second (more get
/// a 429 with `Retry-After: 1`), or refusing the first `refuse_first`.
struct Limited {
    per_second: usize,
    refuse_first: usize,
    accepted: Mutex<VecDeque<Instant>>,
    arrivals: Mutex<Vec<Instant>>,
    refused: AtomicUsize,
}

async fn answer(State(s): State<Arc<Limited>>) -> Response {
    let now = Instant::now();
    let n = {
        let mut arrivals = s.arrivals.lock().unwrap();
        arrivals.push(now);
        arrivals.len()
    };
    let refuse = n <= s.refuse_first || {
        let mut accepted = s.accepted.lock().unwrap();
        while accepted
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            accepted.pop_front();
        }
        let full = accepted.len() >= s.per_second;
        if !full {
            accepted.push_back(now);
        }
        full
    };
    if refuse {
        s.refused.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        )
            .into_response();
    }
    let body = json!({"choices": [{"message": {"content": "done"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1}});
    ([("content-type", "application/json")], body.to_string()).into_response()
}

async fn start(per_second: usize, refuse_first: usize) -> (String, Arc<Limited>) {
    let state = Arc::new(Limited {
        per_second,
        refuse_first,
        accepted: Mutex::new(VecDeque::new()),
        arrivals: Mutex::new(Vec::new()),
        refused: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/v1"), state)
}

fn client(base_url: &str, model: &str, limit: RateLimit) -> OpenAiClient {
    OpenAiClient::builder(model)
        .base_url(base_url)
        .timeout(Duration::from_secs(10))
        .rate_limit(limit)
        .build()
        .unwrap()
}

async fn ask(agent: &ChatAgent, ctx: RunContext) -> Result<String, AgentError> {
    let thread = Arc::new(Thread::from_messages([Message::user("go")]));
    let reply = agent.run(thread, ctx).await?;
    Ok(reply.messages().last().unwrap().text_content().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_agents_on_one_model_share_its_rate_limit() {
    let (base_url, server) = start(10, 0).await;
    let limit = RateLimit {
        requests_per_minute: Some(540),
        tokens_per_minute: None,
        max_concurrent: Some(20),
    };
    // Each agent builds its own client, as agents built from one YAML model
    // do: the limiter is shared by model name and endpoint.
    let agents: Vec<ChatAgent> = (0..100)
        .map(|i| {
            ChatAgent::builder(format!("worker{i}"))
                .model(client(&base_url, "fan-out-model", limit))
                .build()
                .unwrap()
        })
        .collect();
    let (ctx, mut events) = RunContext::stream();
    let started = Instant::now();
    let runs = agents.iter().map(|a| ask(a, ctx.child(a.name())));
    let answers = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(runs))
        .await
        .expect("the fan-out hung");
    for answer in &answers {
        assert_eq!(answer.as_deref().unwrap(), "done");
    }
    let refused = server.refused.load(Ordering::SeqCst);
    assert!(refused <= 5, "{refused} requests got a 429");
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    let throttled = events
        .drain_ready()
        .into_iter()
        .filter(|e| {
            matches!(&e.event, Event::ModelCallThrottled { model, waited_ms, .. }
                if model == "fan-out-model" && *waited_ms > 0.0)
        })
        .count();
    assert!(throttled >= 50, "only {throttled} throttled events");
}

#[tokio::test]
async fn a_429_with_retry_after_holds_back_every_caller() {
    let (base_url, server) = start(1000, 1).await;
    let limit = RateLimit {
        max_concurrent: Some(100),
        ..RateLimit::default()
    };
    let first = ChatAgent::builder("first")
        .model(client(&base_url, "penalized-model", limit))
        .build()
        .unwrap();
    let second = ChatAgent::builder("second")
        .model(client(&base_url, "penalized-model", limit))
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let t0 = Instant::now();
    let a = ask(&first, ctx.child("first"));
    let b = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ask(&second, ctx.child("second")).await
    };
    let (a, b) = tokio::join!(a, b);
    assert_eq!(a.unwrap(), "done");
    assert_eq!(b.unwrap(), "done");
    let arrivals = server.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 3, "the 429, the retry, the other caller");
    let refused_at = arrivals[0].duration_since(t0);
    for later in &arrivals[1..] {
        // The other caller started 200 ms in, yet waited out the 1 s too.
        assert!(
            later.duration_since(t0) >= refused_at + Duration::from_millis(950),
            "{:?} after the 429 at {refused_at:?}",
            later.duration_since(t0)
        );
    }
    let waited: Vec<(String, f64)> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ModelCallThrottled {
                path, waited_ms, ..
            } => Some((path.to_string(), waited_ms)),
            _ => None,
        })
        .collect();
    assert!(
        waited
            .iter()
            .any(|(path, ms)| path == "second" && *ms >= 600.0),
        "{waited:?}"
    );
}

fn server_error(model: &str) -> ScriptedReply {
    ScriptedReply::Error(ModelError::Status {
        endpoint: format!("http://{model}/v1/chat/completions"),
        status: 500,
        body: "internal error".into(),
        retry_after: None,
    })
}

fn hi() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("hi")])
}

#[tokio::test]
async fn a_failing_model_falls_back_and_cools_down() {
    let primary = Arc::new(
        ScriptedModel::new([
            server_error("primary"),
            ScriptedReply::text("primary again"),
        ])
        .named("primary"),
    );
    let backup = Arc::new(
        ScriptedModel::new([ScriptedReply::text("one"), ScriptedReply::text("two")])
            .named("backup"),
    );
    let chain = FallbackModel::new([
        primary.clone() as Arc<dyn ChatModel>,
        backup.clone() as Arc<dyn ChatModel>,
    ])
    .cooldown(Duration::from_secs(60));
    assert_eq!(chain.model_name(), "primary");
    assert_eq!(chain.complete(&hi()).await.unwrap().text_content(), "one");
    // The primary is cooling down: the next call goes straight to the backup.
    assert_eq!(chain.complete(&hi()).await.unwrap().text_content(), "two");
    assert_eq!(primary.remaining(), Some(1), "the primary was asked again");

    // Through an agent, with a short cooldown: the primary is asked again
    // once it is over.
    let primary =
        Arc::new(ScriptedModel::new([server_error("p"), ScriptedReply::text("back")]).named("p"));
    let backup = Arc::new(ScriptedModel::new([ScriptedReply::text("b")]).named("b"));
    let chain = FallbackModel::new([
        primary.clone() as Arc<dyn ChatModel>,
        backup as Arc<dyn ChatModel>,
    ])
    .cooldown(Duration::from_millis(50));
    let agent = ChatAgent::builder("a").model(chain).build().unwrap();
    assert_eq!(ask(&agent, RunContext::new()).await.unwrap(), "b");
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(ask(&agent, RunContext::new()).await.unwrap(), "back");
}

#[tokio::test]
async fn when_every_model_fails_the_error_names_each() {
    let chain = FallbackModel::new([
        Arc::new(ScriptedModel::new([server_error("one")]).named("model-one"))
            as Arc<dyn ChatModel>,
        Arc::new(ScriptedModel::new([server_error("two")]).named("model-two")),
    ]);
    let e = chain.complete(&hi()).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("model-one: ") && text.contains("model-two: "),
        "{text}"
    );
    assert!(matches!(e, ModelError::FallbackExhausted { ref tried, .. } if tried.len() == 2));
    // A failure another model would not fix is not passed on.
    let chain = FallbackModel::new([
        Arc::new(ScriptedModel::new([ScriptedReply::error("bad request")]).named("x"))
            as Arc<dyn ChatModel>,
        Arc::new(ScriptedModel::new([ScriptedReply::text("never")]).named("y")),
    ]);
    assert_eq!(
        chain.complete(&hi()).await.unwrap_err().to_string(),
        "bad request"
    );
}

fn cut(text: &str) -> ScriptedReply {
    ScriptedReply::Response(ChatResponse {
        finish_reason: FinishReason::Length,
        ..ChatResponse::text(text)
    })
}

#[tokio::test]
async fn a_cut_off_answer_is_an_error_naming_the_model() {
    let agent = ChatAgent::builder("writer")
        .model(ScriptedModel::new([cut("Once upon a")]).named("tiny-model"))
        .max_tokens(3)
        .build()
        .unwrap();
    let e = ask(&agent, RunContext::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tiny-model") && e.contains("cut off at max_tokens (3)"),
        "{e}"
    );
}

#[tokio::test]
async fn on_length_continue_joins_the_parts() {
    let model = Arc::new(
        ScriptedModel::new([cut("Once upon "), cut("a ti"), ScriptedReply::text("me.")])
            .named("tiny-model"),
    );
    let agent = ChatAgent::builder("writer")
        .model_arc(model.clone())
        .on_length(OnLength::Continue { rounds: 3 })
        .build()
        .unwrap();
    assert_eq!(
        ask(&agent, RunContext::new()).await.unwrap(),
        "Once upon a time."
    );
    let last = model.requests().pop().unwrap();
    let tail: Vec<&str> = last
        .messages
        .iter()
        .rev()
        .take(4)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        tail,
        [CONTINUE_PROMPT, "a ti", CONTINUE_PROMPT, "Once upon "]
    );

    // Still cut off after the rounds allowed: an error.
    let agent = ChatAgent::builder("writer")
        .model(ScriptedModel::new([cut("a"), cut("b")]).named("tiny-model"))
        .on_length(OnLength::Continue { rounds: 1 })
        .build()
        .unwrap();
    let e = ask(&agent, RunContext::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut off"), "{e}");
}
