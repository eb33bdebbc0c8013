//! Seeds 004, 002 and 000 through the binary (issue 43): cagent's list
//! form `workflow: [steps…]`, several outputs from one turn, pass-down modes.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use common::{run, text, write};

const LISTED: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: [first says hi]}
  b: {model: m, script: [second says bye]}
workflow:
  - agent: a
  - agent: b
"#;

#[test]
fn a_workflow_written_as_a_list_runs_as_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "listed.yaml", LISTED);
    let out = run(dir.path(), &["validate", "listed.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "listed.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (a, b) = (stdout.find("first says hi"), stdout.find("second says bye"));
    assert!(a.is_some() && b.is_some() && a < b, "{stdout}");

    // A bad step in the list is placed where it is written.
    let bad = LISTED.replace("  - agent: b\n", "  - agent: nobody\n");
    write(dir.path(), "bad.yaml", &bad);
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.yaml:9:"), "{err}");
    assert!(err.contains("nobody"), "{err}");
}

/// The scout yields two outputs with the `yield_output` tool, then answers.
const YIELD: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  scout:
    model: m
    tools: [yield_output]
    script:
      - tool_call: {name: yield_output, arguments: {text: first finding}}
      - tool_call: {name: yield_output, arguments: {text: second finding}}
      - all done
  reader: {model: m, script: [read them]}
workflow:
  steps:
    - agent: scout
    - agent: reader
"#;

/// The text of a `message_produced` event's message.
fn produced_text(e: &serde_json::Value) -> String {
    e["message"]["content"].to_string()
}

#[test]
fn outputs_yielded_in_one_turn_reach_the_stream_and_the_result() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "yield.yaml", YIELD);
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--events",
            "jsonl",
            "yield.yaml",
            "go",
        ],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let scout: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "message_produced" && e["path"] == "workflow/scout")
        .map(produced_text)
        .collect();
    assert_eq!(scout.len(), 3, "{scout:?}");
    assert!(scout[0].contains("first finding"), "{scout:?}");
    assert!(scout[1].contains("second finding"), "{scout:?}");
    assert!(scout[2].contains("all done"), "{scout:?}");
    let finished = events
        .iter()
        .find(|e| e["type"] == "agent_finished" && e["path"] == "workflow/scout")
        .unwrap_or_else(|| panic!("no agent_finished: {stdout}"));
    assert_eq!(finished["produced"], 3, "{finished}");
    // The final response is still the run's last message.
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result", "{last}");
    assert!(
        last["final_response"].to_string().contains("read them"),
        "{last}"
    );

    // On the console: each output in order, then the next step.
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "yield.yaml", "go"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let order: Vec<usize> = ["first finding", "second finding", "all done", "read them"]
        .iter()
        .map(|w| {
            stdout
                .rfind(w)
                .unwrap_or_else(|| panic!("no `{w}` in {stdout}"))
        })
        .collect();
    assert!(order.is_sorted(), "{order:?}: {stdout}");
}

/// A plan of two steps: `a` (scripted) finds, `b` (a model endpoint on
/// 127.0.0.1 that keeps what it is sent) uses what `a` found, passed down
/// as `PASSING` says.
fn plan_config(model: &str, passing: &str, request: &str) -> String {
    format!(
        r#"version: 1
models:
  s: {{provider: scripted}}
  live:
    provider: openai
    model: fake
    base_url: "{model}"
    api_key_env: TROUPE_TEST_KEY
agents:
  a: {{model: s, script: [a latte]}}
  b: {{model: live}}
workflow:
  plan:
    text: "A -> B"
    steps:
      A: {{agent: a, request: find a drink}}
      B: {{agent: b, request: "{request}"}}
    passing: {passing}
"#
    )
}

/// The messages `b`'s model was sent, as (role, text) pairs, after
/// running the plan with `passing` and `request`.
fn seen_by_b(passing: &str, request: &str) -> Vec<(String, String)> {
    use common::mcp_eras::{Model, completion};
    let model = Model::start(Box::new(|_| {
        completion(
            serde_json::json!({"role": "assistant", "content": "ordered"}),
            (1, 1),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "plan.yaml",
        &plan_config(&model.url, passing, request),
    );
    let out = common::mcp_eras::troupe_run(dir.path(), &["run", "--no-input", "plan.yaml", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ordered"));
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    seen[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn user(text: &str) -> (String, String) {
    ("user".into(), text.into())
}

#[test]
fn leading_args_puts_each_result_before_the_request() {
    let seen = seen_by_b("leading_args", "order it");
    assert_eq!(
        seen,
        vec![user("go"), user("a latte"), user("order it")],
        "{seen:?}"
    );
}

#[test]
fn a_named_key_puts_the_result_into_the_request_or_under_its_name() {
    let seen = seen_by_b("{key: drink}", "order {drink} now");
    assert_eq!(
        seen,
        vec![user("go"), user("order a latte now")],
        "{seen:?}"
    );

    // A request that does not name the key: the result comes under it.
    let seen = seen_by_b("{key: drink}", "order it");
    assert_eq!(
        seen,
        vec![user("go"), user("drink:\na latte"), user("order it")],
        "{seen:?}"
    );
}

#[test]
fn an_empty_key_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.yaml",
        &plan_config("http://127.0.0.1:9/v1", "{key: ' '}", "order it"),
    );
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.yaml:18:20:") && err.contains("field `workflow.plan.passing.key`"),
        "{err}"
    );
}

#[test]
fn a_graph_node_takes_its_predecessors_results_as_leading_args() {
    use common::mcp_eras::{Model, completion};
    let model = Model::start(Box::new(|_| {
        completion(
            serde_json::json!({"role": "assistant", "content": "served"}),
            (1, 1),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"version: 1
models:
  s: {{provider: scripted}}
  live:
    provider: openai
    model: fake
    base_url: "{}"
    api_key_env: TROUPE_TEST_KEY
agents:
  split: {{model: s, script: [two orders]}}
  a:
    model: s
    tools: [yield_output]
    script:
      - tool_call: {{name: yield_output, arguments: {{text: a draft}}}}
      - a latte
  b: {{model: s, script: [a bagel]}}
  c: {{model: live}}
workflow:
  graph:
    nodes: [split, a, b, {{agent: c, input: leading_args}}]
    transitions:
      - {{from: split, to: a}}
      - {{from: split, to: b}}
      - {{from: a, to: c}}
      - {{from: b, to: c}}
"#,
        model.url
    );
    write(dir.path(), "graph.yaml", &yaml);
    let out = common::mcp_eras::troupe_run(dir.path(), &["run", "--no-input", "graph.yaml", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let users: Vec<String> = seen[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    // Each predecessor's result (its last output: not `a`'s draft) is a
    // message of its own (in the order they spoke), last in what the node
    // sees.
    assert!(!users.iter().any(|u| u.contains("a draft")), "{users:?}");
    let tail: Vec<&str> = users.iter().rev().take(2).map(String::as_str).collect();
    let mut tail_sorted = tail.clone();
    tail_sorted.sort_unstable();
    assert_eq!(tail_sorted, ["a bagel", "a latte"], "{users:?}");
}

#[test]
fn nothing_and_attachments_are_what_their_names_say() {
    // `NoPassDown`: the task and the request only.
    let seen = seen_by_b("nothing", "order it");
    assert_eq!(seen, vec![user("go"), user("order it")], "{seen:?}");
    // `ResultAsFirstArg` as the seed's planning agent renders it: the
    // results as attachments, one message before the request.
    let seen = seen_by_b("attachments", "order it");
    assert_eq!(
        seen,
        vec![
            user("go"),
            user("<attachment id=\"A\" description=\"find a drink\">\na latte\n</attachment>"),
            user("order it")
        ],
        "{seen:?}"
    );
}
