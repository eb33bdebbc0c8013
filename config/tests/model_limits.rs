//! A model's `rate_limit`, `retry`, `fallback`, `cooldown` and `on_length`
//! from YAML, against an in-process server on 127.0.0.1, through the path
//! a user takes (parse, build, run); and the mistakes in them refused with
//! the field named.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "../../agents/tests/openai/fake_server.rs"]
mod fake_server;

use std::time::Duration;

use fake_server::{Answer, FakeOpenAi};
use serde_json::json;
use troupe_agents::CONTINUE_PROMPT;
use troupe_config::{BuildOptions, Config};
use troupe_runtime::{Event, RunContext, RunStatus};

fn answer(text: &str, finish: &str) -> Answer {
    Answer::json(
        json!({"choices": [{"message": {"content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}}),
    )
}

#[tokio::test]
async fn a_failing_model_falls_back_and_a_cut_off_answer_goes_on() {
    let server = FakeOpenAi::start([
        Answer::status(500, "primary down"),
        Answer::status(500, "primary down"),
        answer("Once upon ", "length"),
        answer("a time.", "stop"),
        answer("Edited.", "stop"),
    ])
    .await;
    // The key variable must be set without touching the environment:
    // cargo sets CARGO_PKG_NAME for every test it runs.
    let yaml = format!(
        "version: 1
models:
  primary:
    provider: openai
    model: big-model
    base_url: {base}
    api_key_env: CARGO_PKG_NAME
    retry: {{attempts: 2, initial: 10ms, max: 20ms, multiplier: 3, jitter: false, on: [server_error, rate_limit]}}
    rate_limit: {{requests_per_minute: 600, max_concurrent: 4}}
    fallback: [backup]
    cooldown: 5m
    on_length: continue
    stream: false
  backup:
    provider: openai
    model: small-model
    base_url: {base}
    api_key_env: CARGO_PKG_NAME
    retries: 1
agents:
  writer:
    model: primary
    instructions: Tell a story.
  editor:
    model: primary
    instructions: Edit it.
workflow:
  sequential: {{participants: [writer, editor]}}
",
        base = server.base_url
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let (ctx, mut events) = RunContext::stream();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        built.workflow.run_task("A story, please.", &ctx),
    )
    .await
    .expect("the run hung")
    .unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.final_text(), "Edited.");
    let story = result
        .messages
        .iter()
        .find(|m| m.text_content() == "Once upon a time.");
    assert!(story.is_some(), "{:?}", result.messages);

    let requests = server.requests();
    let models: Vec<&str> = requests
        .iter()
        .map(|r| r.body["model"].as_str().unwrap())
        .collect();
    // The primary's two attempts, then the backup; the primary cools down,
    // so the continuation goes to the backup straight away, and so does the
    // editor (another agent on the same model).
    assert_eq!(
        models,
        [
            "big-model",
            "big-model",
            "small-model",
            "small-model",
            "small-model"
        ]
    );
    let last = requests[3].body["messages"].as_array().unwrap();
    assert_eq!(last[last.len() - 2]["content"], "Once upon ");
    assert_eq!(last[last.len() - 1]["content"], CONTINUE_PROMPT);

    // The retry came 10 ms after the 500, before the primary's rate limit
    // (one request per 100 ms) let it go: the wait is an event.
    let throttled: Vec<f64> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ModelCallThrottled { waited_ms, .. } => Some(waited_ms),
            _ => None,
        })
        .collect();
    assert!(throttled.iter().any(|ms| *ms >= 50.0), "{throttled:?}");
}

#[tokio::test]
async fn a_cut_off_answer_fails_the_run_by_default() {
    let server = FakeOpenAi::start([answer("Once upon ", "length")]).await;
    let yaml = format!(
        "version: 1
models:
  m: {{provider: openai, model: tiny-model, base_url: '{}', api_key_env: CARGO_PKG_NAME, max_tokens: 4}}
agents:
  writer: {{model: m, instructions: Tell a story.}}
workflow:
  sequential: {{participants: [writer]}}
",
        server.base_url
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let outcome = built
        .workflow
        .run_task("A story, please.", &RunContext::new())
        .await;
    let text = match outcome {
        Ok(result) => format!("{result:?}"),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("tiny-model") && text.contains("cut off at max_tokens (4)"),
        "{text}"
    );
}

#[test]
fn mistakes_in_limits_are_refused_naming_the_field() {
    let yaml = "version: 1
models:
  a:
    provider: openai
    model: x
    retries: 2
    retry: {attempts: 0, multiplier: 0.5}
    rate_limit: {requests_per_minute: 0}
    fallback: [a, nowhere]
  b:
    provider: scripted
    replies: [hi]
    rate_limit: {max_concurrent: 2}
    cooldown: 1m
agents:
  w: {model: b}
workflow:
  sequential: {participants: [w]}
";
    let e = Config::parse(yaml, "t.yaml").unwrap_err().to_string();
    for expected in [
        "models.a.retries",
        "`retries` and `retry` both set the attempts",
        "models.a.retry.attempts",
        "models.a.retry.multiplier",
        "models.a.rate_limit.requests_per_minute",
        "models.a.fallback[0]",
        "cannot fall back to itself",
        "unknown model `nowhere`",
        "models.b.rate_limit",
        "models.b.cooldown",
    ] {
        assert!(e.contains(expected), "missing {expected:?} in:\n{e}");
    }
}
