//! Planning workflows, agents as tools and context policies from YAML,
//! through the Rust API a CLI uses: what each step receives of earlier
//! ones under each `passing` mode, a shared-thread agent tool, and a
//! context policy that changes what the model is shown.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_config::{BuildOptions, Config};
use troupe_runtime::{RunContext, RunResult, RunStatus};

async fn run(yaml: &str, task: &str) -> RunResult {
    let config = Config::parse(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(20),
        built.workflow.run_task(task, &RunContext::new()),
    )
    .await
    .expect("the run hung")
    .unwrap()
}

/// What agent `source` said, in order.
fn said(result: &RunResult, source: &str) -> Vec<String> {
    result
        .messages
        .iter()
        .filter(|m| &*m.source == source)
        .map(|m| m.text_content().into_owned())
        .collect()
}

/// The final response's text.
fn final_text(result: &RunResult) -> String {
    result
        .final_response
        .as_deref()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// A plan of two steps under a `passing` mode. What the second step is
/// given shows in its prompt's size (scripted models count the request's
/// tokens).
fn two_steps(passing: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  finder: {{model: m, script: [FOUND a recipe]}}
  buyer: {{model: m, script: [BOUGHT it]}}
workflow:
  plan:
    text: FIND -> BUY
    steps:
      FIND: {{agent: finder, request: Find a recipe}}
      BUY: {{agent: buyer, request: Buy what it needs}}
    passing: {passing}
"
    )
}

#[tokio::test]
async fn a_text_plan_runs_its_steps_in_order_under_every_passing_mode() {
    let mut prompt = std::collections::BTreeMap::new();
    for passing in ["nothing", "attachments", "messages"] {
        let result = run(&two_steps(passing), "cook dinner").await;
        assert_eq!(result.status, RunStatus::Completed, "{passing}");
        assert_eq!(said(&result, "FIND"), ["FOUND a recipe"], "{passing}");
        assert_eq!(said(&result, "BUY"), ["BOUGHT it"], "{passing}");
        let find = result.messages.iter().position(|m| &*m.source == "FIND");
        let buy = result.messages.iter().position(|m| &*m.source == "BUY");
        assert!(find < buy, "{passing}: BUY ran before FIND");
        let usage = buy
            .and_then(|i| result.messages[i].usage)
            .expect("BUY's usage");
        prompt.insert(passing, usage.prompt_tokens);
    }
    // Given nothing, BUY's prompt is the smallest: FIND's result reaches it
    // as an attachment or as its message under the other modes.
    assert!(prompt["nothing"] < prompt["attachments"], "{prompt:?}");
    assert!(prompt["nothing"] < prompt["messages"], "{prompt:?}");
}

#[tokio::test]
async fn action_groups_are_merged_by_their_summarizer_agent() {
    let yaml = "version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: [from a]}
  b: {model: m, script: [from b]}
  c: {model: m, script: [from c]}
  merge: {model: m, script: [b and c merged]}
workflow:
  plan:
    groups: [[a], [b, c]]
    summarizer: merge
";
    let result = run(yaml, "task").await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(said(&result, "b+c"), ["b and c merged"]);
    assert_eq!(final_text(&result), "b and c merged");
}

/// A round robin of `a` and `b`, four turns; `a` answers by how many of
/// its own answers its model is shown.
fn chat(context: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  a: {{model: m, {context} script: [first, second, third]}}
  b: {{model: m, script: [ok, ok, ok]}}
workflow:
  round_robin: {{participants: [a, b]}}
  max_turns: 4
"
    )
}

#[tokio::test]
async fn a_context_policy_limits_what_the_model_is_shown() {
    // The whole thread: `a` sees its first answer on its second turn.
    let whole = run(&chat(""), "talk").await;
    assert_eq!(said(&whole, "a"), ["first", "second"]);
    // The last message only: `a` never sees its own answers.
    let last = run(&chat("context: {last: 1},"), "talk").await;
    assert_eq!(said(&last, "a"), ["first", "first"]);
    // A budget too small for more than the newest message does the same.
    let tokens = run(&chat("context: {max_tokens: 1},"), "talk").await;
    assert_eq!(said(&tokens, "a"), ["first", "first"]);
}

#[tokio::test]
async fn an_agent_tool_returns_the_callees_answer_to_the_caller() {
    let yaml = "version: 1
models:
  m: {provider: scripted}
agents:
  lead:
    model: m
    tools: [{agent: helper, name: ask_helper, shared_thread: true}]
    script:
      - tool_call: {name: ask_helper, arguments: {request: what is 2 + 2?}}
      - the helper says 4
  helper: {model: m, script: ['4']}
workflow: {sequential: {participants: [lead]}}
";
    let result = run(yaml, "sum").await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(final_text(&result), "the helper says 4");
    let lead = result.thread.child("lead").expect("lead's thread");
    let results: Vec<String> = lead
        .messages()
        .iter()
        .filter_map(|m| match &m.content {
            troupe_runtime::Content::ToolResults(r) => Some(format!("{r:?}")),
            _ => None,
        })
        .collect();
    assert!(results.iter().any(|r| r.contains('4')), "{results:?}");
}
