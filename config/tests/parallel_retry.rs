//! A `parallel` block with `retry:` from YAML: a failure of one of its
//! steps reruns every step of the block (all or nothing), the event shows
//! the block's attempt, and the step after the block sees every output.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_config::{BuildOptions, Config};
use troupe_runtime::{Event, RunContext, RunResult};

async fn run(yaml: &str) -> (Result<RunResult, troupe_runtime::RunError>, Vec<Event>) {
    let config = Config::parse(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let (ctx, mut events) = RunContext::stream();
    let result = tokio::time::timeout(Duration::from_secs(20), built.workflow.run_task("go", &ctx))
        .await
        .expect("the run hung");
    (
        result,
        events.drain_ready().into_iter().map(|r| r.event).collect(),
    )
}

fn config(pricing: &str, on: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  specs: {{model: m, script: [16 GB]}}
  pricing: {{model: m, script: {pricing}}}
  writer: {{model: m, script: [done]}}
workflow:
  steps:
    - id: gather
      retry: {{max_attempts: 2, delay: 1ms{on}}}
      steps: [{{agent: specs}}, {{agent: pricing}}]
    - agent: writer
"
    )
}

fn retries(events: &[Event]) -> Vec<(String, u32)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { path, attempt, .. } => Some((path.to_string(), *attempt)),
            _ => None,
        })
        .collect()
}

fn turns_of(events: &[Event], agent: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::AgentStarted { path, .. } if path.ends_with(agent)))
        .count()
}

#[tokio::test]
async fn a_failed_step_reruns_the_whole_block_and_the_next_step_sees_every_output() {
    let yaml = config(
        "[{error: \"HTTP 429: rate limit\"}, 1099 EUR]",
        ", on: [timeout, {pattern: \"rate limit|429\"}]",
    );
    let (result, events) = run(&yaml).await;
    let result = result.unwrap();
    assert_eq!(result.final_text(), "done");
    assert_eq!(retries(&events), [("workflow/gather".to_string(), 1)]);
    // All or nothing: the step that had succeeded ran again.
    assert_eq!(turns_of(&events, "gather/specs"), 2);
    assert_eq!(turns_of(&events, "gather/pricing"), 2);
    let writer: Vec<String> = result
        .thread
        .child("writer")
        .unwrap()
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert!(writer.contains(&"16 GB".to_string()), "{writer:?}");
    assert!(writer.contains(&"1099 EUR".to_string()), "{writer:?}");
    // Templates still reach the block's steps.
    assert_eq!(result.state().get("steps.pricing.output"), Some("1099 EUR"));
    assert_eq!(result.state().get("steps.specs.output"), Some("16 GB"));
}

#[tokio::test]
async fn a_failure_the_patterns_do_not_match_is_not_retried() {
    let yaml = config(
        "[{error: \"HTTP 400: bad request\"}, 1099 EUR]",
        ", on: [{pattern: \"rate limit|429\"}]",
    );
    let (result, events) = run(&yaml).await;
    let err = result.unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    assert!(retries(&events).is_empty());
}

#[tokio::test]
async fn without_retry_left_the_run_fails_after_the_last_attempt() {
    let yaml = config(
        "[{error: \"HTTP 429: one\"}, {error: \"HTTP 429: two\"}, {error: \"HTTP 429: three\"}, fine]",
        "",
    );
    let (result, events) = run(&yaml).await;
    let err = result.unwrap_err();
    assert!(err.to_string().contains("three"), "{err}");
    let attempts: Vec<u32> = retries(&events).into_iter().map(|(_, a)| a).collect();
    assert_eq!(attempts, [1, 2]);
}
