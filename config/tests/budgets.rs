//! `pricing:` on a model and budgets in `stop:` through a built YAML team:
//! each budget (tokens, cost, model calls, tool calls) ends the run as
//! stopped with a reason naming it, in the mapping and the expression
//! form; a priced run reports its cost, and a failed one what it spent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_config::{BuildOptions, Config};
use troupe_runtime::{RunContext, RunError, RunResult, RunStatus};

/// A writer that calls the calculator, then answers, turn after turn
/// (two model calls and one tool call a turn); its model costs 1 USD per
/// million tokens read and 2 per million written.
fn yaml(stop: &str, last: &str) -> String {
    format!(
        r#"version: 1
models:
  m:
    provider: scripted
    pricing: {{input: 1.0, output: 2.0}}
agents:
  writer:
    model: m
    tools: [calculator]
    script:
      - tool_call: {{name: calculator, arguments: {{expression: "1 + 2"}}}}
      - three
      - tool_call: {{name: calculator, arguments: {{expression: "2 + 2"}}}}
      - four
      - tool_call: {{name: calculator, arguments: {{expression: "3 + 2"}}}}
      - {last}
workflow:
  round_robin: {{participants: [writer]}}
  stop: {stop}
  max_turns: 12
"#
    )
}

async fn run(stop: &str, last: &str) -> Result<RunResult, RunError> {
    let config = Config::parse(&yaml(stop, last), "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let built = config.build(&BuildOptions::default()).await.unwrap();
    let ctx = RunContext::new();
    let run = built.workflow.run_task("go", &ctx);
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run hung")
}

/// The run, stopped by a budget: its reason and result.
async fn stopped(stop: &str) -> (String, RunResult) {
    let r = run(stop, "five").await.unwrap();
    match &r.status {
        RunStatus::Stopped(reason) => (reason.to_string(), r),
        other => panic!("not stopped by a budget ({stop}): {other}"),
    }
}

#[tokio::test]
async fn a_model_call_budget_stops_the_run_in_either_form() {
    for stop in ["{max_model_calls: 3}", "\"max_model_calls(3)\""] {
        let (reason, r) = stopped(stop).await;
        assert_eq!(reason, "max_model_calls(3): budget: 4 model calls ≥ 3");
        assert_eq!(r.stats.total.model_calls, 4);
        assert_eq!(r.turns, 2);
    }
}

#[tokio::test]
async fn a_tool_call_budget_stops_the_run() {
    let (reason, r) = stopped("{max_tool_calls: 2}").await;
    assert_eq!(reason, "max_tool_calls(2): budget: 2 tool calls ≥ 2");
    assert_eq!(
        r.stats.agents["workflow/writer"].tool_calls, 2,
        "{:?}",
        r.stats
    );
}

#[tokio::test]
async fn a_cost_budget_stops_the_run_and_the_cost_follows_the_pricing() {
    // A turn costs about 0.00005 USD here (some 35 tokens read, 10
    // written): the budget is passed in the second turn.
    let (reason, r) = stopped("{max_cost: 0.00008}").await;
    assert!(
        reason.starts_with("max_cost(0.00008): budget: cost 0.0001"),
        "{reason}"
    );
    assert!(reason.ends_with(" USD ≥ 0.00008"), "{reason}");
    let t = r.stats.total;
    let cost = t.cost.expect("priced");
    assert!(cost >= 0.00008);
    let expected = (t.input_tokens as f64 * 1.0 + t.output_tokens as f64 * 2.0) / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    assert_eq!(r.turns, 2);
}

#[tokio::test]
async fn a_token_budget_counts_what_the_model_calls_used() {
    let (reason, r) = stopped("\"token_budget(100)\"").await;
    assert!(
        reason.starts_with("token_budget(100): budget: "),
        "{reason}"
    );
    assert!(r.stats.total.tokens() >= 100);
    assert_eq!(r.usage.total(), r.stats.total.tokens());
}

#[tokio::test]
async fn a_failed_run_reports_its_priced_calls() {
    let err = run("{max_turns: 9}", "{error: the server went away}")
        .await
        .unwrap_err();
    let s = err.stats().expect("stats of the failed run");
    // Three turns: the third made one call, then the model failed.
    assert_eq!(s.total.model_calls, 5, "{s:?}");
    assert_eq!(s.total.tool_calls, 3);
    assert_eq!(s.total.turns, 3);
    assert!(s.total.cost.unwrap() > 0.0);
    assert!(s.total.input_tokens > 0);
}

#[tokio::test]
async fn a_bad_price_or_budget_is_refused_naming_it() {
    let e = Config::parse(&yaml("{max_cost: -1}", "five"), "t.yaml").unwrap_err();
    assert!(e.to_string().contains("max_cost"), "{e}");
    let e = Config::parse(&yaml("\"max_cost(nothing)\"", "five"), "t.yaml").unwrap_err();
    assert!(e.to_string().contains("amount in USD"), "{e}");
    // A price below zero is refused where it is written, before any build.
    let bad = yaml("{max_turns: 2}", "five").replace("input: 1.0", "input: -1.0");
    let e = Config::parse(&bad, "t.yaml").unwrap_err();
    assert!(
        e.to_string().contains("pricing.input`: -1 is not a price"),
        "{e}"
    );
}
