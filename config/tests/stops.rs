//! Every stop condition a config can write, through a built YAML team:
//! the run stops on it with the reason that names it. Expressions (`|`,
//! `&`) and the mapping form alike.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_config::{BuildOptions, Config};
use troupe_runtime::{RunContext, RunStatus};

/// A round-robin team of `writer` and `critic` with these scripts, stopped
/// by `stop` (YAML), run to its end; the stop reason as shown.
async fn reason(writer: &str, critic: &str, stop: &str) -> String {
    let yaml = format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  writer:
    model: m
    tools: [calculator]
    script: {writer}
  critic:
    model: m
    handoffs: [writer]
    script: {critic}
workflow:
  round_robin: {{participants: [writer, critic]}}
  stop: {stop}
  max_turns: 12
"
    );
    let config = Config::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let ctx = RunContext::new();
    let run = built.workflow.run_task("go", &ctx);
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run hung")
        .unwrap();
    match result.status {
        RunStatus::Stopped(r) => r.to_string(),
        other => panic!("not stopped by a condition: {other}"),
    }
}

const DRAFTS: &str = "[draft one, draft two, draft three, draft four, draft five, draft six]";
const NOTES: &str = "[more detail, fine now, APPROVE, APPROVE, APPROVE, APPROVE]";

#[tokio::test]
async fn text_mention_and_max_messages_as_expressions() {
    let r = reason(
        DRAFTS,
        NOTES,
        "\"text_mention(APPROVE) | max_messages(40)\"",
    )
    .await;
    assert_eq!(r, "text_mention(\"APPROVE\"): 'critic' mentioned it");
    // The task and three replies.
    let r = reason(DRAFTS, NOTES, "max_messages(4)").await;
    assert_eq!(r, "max_messages(4): 4 messages");
}

#[tokio::test]
async fn text_mention_from_a_source_only() {
    let writer = "[I APPROVE of myself, draft two, draft three, draft four, draft five, draft six]";
    let r = reason(writer, NOTES, "\"text_mention(APPROVE from critic)\"").await;
    assert_eq!(
        r,
        "text_mention(\"APPROVE\" from critic): 'critic' mentioned it"
    );
}

#[tokio::test]
async fn source_match_and_text_message_by_source() {
    let r = reason(DRAFTS, NOTES, "{source_match: [critic]}").await;
    assert_eq!(r, "source_match(critic): 'critic' spoke");
    let r = reason(DRAFTS, NOTES, "text_message(critic)").await;
    assert_eq!(r, "text_message(critic): 'critic' sent a text message");
    let r = reason(DRAFTS, NOTES, "{text_message: [writer]}").await;
    assert_eq!(r, "text_message(writer): 'writer' sent a text message");
}

#[tokio::test]
async fn function_call_when_the_tool_is_called() {
    let writer = "[{tool_call: {name: calculator, arguments: {expression: \"6*7\"}}}, it is 42, more, more, more, more, more]";
    let r = reason(writer, NOTES, "{function_call: calculator}").await;
    assert_eq!(r, "function_call(calculator): 'writer' called 'calculator'");
}

#[tokio::test]
async fn handoff_to_a_target() {
    let critic = "[{handoff: {to: writer, reason: rewrite}}, x, x, x, x, x]";
    let r = reason(DRAFTS, critic, "\"handoff(writer) | max_turns(9)\"").await;
    assert_eq!(r, "handoff(writer): 'critic' handed off to 'writer'");
}

#[tokio::test]
async fn all_of_holds_when_each_part_has_held() {
    // The writer's text arrives first, the critic's APPROVE on turn 6.
    let r = reason(
        DRAFTS,
        NOTES,
        "\"text_message(writer) & text_mention(APPROVE)\"",
    )
    .await;
    assert!(
        r.starts_with("text_message(writer) & text_mention(\"APPROVE\"): "),
        "{r}"
    );
    let r = reason(
        DRAFTS,
        NOTES,
        "{all: [\"source_match(writer)\", {text_mention: fine}]}",
    )
    .await;
    assert!(
        r.starts_with("source_match(writer) & text_mention(\"fine\")"),
        "{r}"
    );
}

#[tokio::test]
async fn token_budget_and_timeout_and_max_turns() {
    // A scripted reply reports a usage as a model's would.
    let r = reason(
        DRAFTS,
        "[a, b, c, d, e, f]",
        "\"token_budget(10) | max_turns(9)\"",
    )
    .await;
    assert!(r.starts_with("token_budget(10): "), "{r}");
    assert!(r.contains(" tokens spent ≥ 10"), "{r}");
    let r = reason(DRAFTS, "[a, b, c, d, e, f]", "{timeout: 1h, max_turns: 2}").await;
    assert_eq!(r, "max_turns(2): 2 turns");
}

#[tokio::test]
async fn prompt_and_completion_token_limits_as_expression_and_mapping() {
    // Scripted replies report a usage as a model's would: the prompt
    // grows with the conversation, the completion does not.
    let r = reason(
        DRAFTS,
        "[a, b, c, d, e, f]",
        "\"completion_tokens(4) | max_turns(12)\"",
    )
    .await;
    assert!(r.starts_with("completion_tokens(4): "), "{r}");
    assert!(r.contains(" completion tokens written ≥ 4"), "{r}");
    let r = reason(
        DRAFTS,
        "[a, b, c, d, e, f]",
        "{any: [{prompt_tokens: 30}, {max_turns: 12}]}",
    )
    .await;
    assert!(r.starts_with("prompt_tokens(30): "), "{r}");
    assert!(r.contains(" prompt tokens read ≥ 30"), "{r}");
}
