//! Seed 000 through the binary (issue 43 items 4 and 5): a graph node's
//! results under a named key, declarative merges (a template) at a fan-in
//! node, after a parallel block and in a plan, and the per-node result
//! cache across processes. What a model was sent is read at an
//! OpenAI-format endpoint on 127.0.0.1 that keeps every request.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use common::mcp_eras::{Model, completion, troupe_run};
use common::{run, text, write};

/// A model endpoint answering every request with `answer`.
fn model(answer: &'static str) -> Model {
    Model::start(Box::new(move |_| {
        completion(
            serde_json::json!({"role": "assistant", "content": answer}),
            (1, 1),
        )
    }))
}

/// The header of every config: a scripted model `s`, the endpoint `live`.
fn header(url: &str) -> String {
    format!(
        "version: 1\nmodels:\n  s: {{provider: scripted}}\n  live:\n    provider: openai\n    model: fake\n    base_url: \"{url}\"\n    api_key_env: TROUPE_TEST_KEY\n"
    )
}

/// Agents `split`, `a` and `b` (scripted) and `c` (on the endpoint).
const AGENTS: &str = "agents:
  split: {model: s, script: [two orders]}
  a: {model: s, script: [a latte]}
  b: {model: s, script: [a bagel]}
  c: {model: live}
";

/// A graph `split` → `a`, `b` → `c`, node `c` written as `c_node`.
fn fan_in(c_node: &str) -> String {
    format!(
        "workflow:
  graph:
    nodes: [split, a, b, {c_node}]
    transitions:
      - {{from: split, to: a}}
      - {{from: split, to: b}}
      - {{from: a, to: c}}
      - {{from: b, to: c}}
"
    )
}

/// Runs `yaml` with input `go`; the user messages of each request the
/// endpoint was sent.
fn users_seen(model: &Model, yaml: &str) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "team.yaml", yaml);
    let out = run(dir.path(), &["validate", "team.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = troupe_run(dir.path(), &["run", "--no-input", "team.yaml", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    model
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| {
            r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn a_graph_node_takes_its_predecessors_results_under_a_named_key() {
    let m = model("served");
    let yaml = format!(
        "{}{AGENTS}{}",
        header(&m.url),
        fan_in("{agent: c, input: {key: orders}}")
    );
    let seen = users_seen(&m, &yaml);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let last = seen[0].last().unwrap();
    // One message under the key: both results, each once.
    assert!(last.starts_with("orders:\n"), "{seen:?}");
    let body = last.strip_prefix("orders:\n").unwrap();
    let mut parts: Vec<&str> = body.split("\n\n").collect();
    parts.sort_unstable();
    assert_eq!(parts, ["a bagel", "a latte"], "{seen:?}");
}

#[test]
fn a_fan_in_node_reads_its_predecessors_merged_by_a_template() {
    let m = model("served");
    let node = r#"{agent: c, merge: {template: "A says {{ $steps.a.output }}; B says {{ $steps.b.output }}."}}"#;
    let yaml = format!("{}{AGENTS}{}", header(&m.url), fan_in(node));
    let seen = users_seen(&m, &yaml);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].last().map(String::as_str),
        Some("A says a latte; B says a bagel."),
        "{seen:?}"
    );
    // Nothing else of the branches reached the node: the merge stands for them.
    assert!(
        !seen[0].iter().any(|u| u == "a latte" || u == "a bagel"),
        "{seen:?}"
    );
}

#[test]
fn the_step_after_a_parallel_block_reads_the_blocks_merge() {
    let m = model("served");
    let yaml = format!(
        r#"{}{AGENTS}workflow:
  steps:
    - agent: split
    - id: kitchen
      steps: [{{agent: a}}, {{agent: b}}]
      merge:
        template: "drink={{{{ $steps.kitchen.outputs.a.output }}}} food={{{{ $steps.kitchen.outputs[1].output }}}}"
    - agent: c
"#,
        header(&m.url)
    );
    let seen = users_seen(&m, &yaml);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].last().map(String::as_str),
        Some("drink=a latte food=a bagel"),
        "{seen:?}"
    );
}

#[test]
fn a_plan_group_is_merged_by_a_template_before_the_next_request() {
    let m = model("served");
    let yaml = format!(
        r#"{}{AGENTS}workflow:
  plan:
    groups: [[A, B], [C]]
    steps:
      A: {{agent: a, request: find a drink}}
      B: {{agent: b, request: find food}}
      C: {{agent: c, request: order both}}
    merge:
      template: "to order: {{{{ $steps.A.output }}}} and {{{{ $steps.B.output }}}}"
"#,
        header(&m.url)
    );
    let seen = users_seen(&m, &yaml);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0],
        ["go", "to order: a latte and a bagel", "order both"],
        "{seen:?}"
    );
}

#[test]
fn merges_keys_and_caches_written_wrong_are_refused_where_written() {
    let yaml = |c_node: &str| {
        format!(
            "{}{AGENTS}{}",
            header("http://127.0.0.1:9/v1"),
            fan_in(c_node)
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{agent: c, input: attachments, merge: {template: "{{ $steps.a.output }}"}}"#,
            "team.yaml:16:",
            "`merge` and `input` both say what the node reads",
        ),
        (
            r#"{agent: c, merge: {template: "{{ $steps.nobody.output }}"}}"#,
            "team.yaml:16:",
            "names no step or node `nobody`",
        ),
        (
            r#"{agent: c, merge: {template: "{{ $steps.a.output "}}"#,
            "team.yaml:16:",
            "without a closing",
        ),
        (
            "{agent: c, input: {key: ''}}",
            "team.yaml:16:",
            "cannot name the key",
        ),
        (
            "{agent: c, cache: {key: ' '}}",
            "team.yaml:16:",
            "an empty key",
        ),
    ];
    for (node, at, says) in cases {
        write(dir.path(), "team.yaml", &yaml(node));
        let out = run(dir.path(), &["validate", "team.yaml"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{node}: {err}");
        assert!(err.contains(at) && err.contains(says), "{node}: {err}");
    }
}

/// Agent `c` with `instructions`, its node cached by `{{ $input }}`, in a
/// team checkpointing as `checkpoint` says.
fn cached_team(url: &str, instructions: &str, checkpoint: &str) -> String {
    format!(
        "{}agents:\n  split: {{model: s, script: [two orders]}}\n  c: {{model: live, instructions: {instructions}}}\n\
workflow:\n  graph:\n    nodes: [split, {{agent: c, cache: {{key: \"orders={{{{ $input }}}}\"}}}}]\n    transitions:\n      - {{from: split, to: c}}\n\
checkpoint: {checkpoint}\n",
        header(url)
    )
}

/// Four runs, each its own `troupe` process, on the store `checkpoint`
/// describes: the cached node's model is asked by the first run and by
/// the first after its instructions changed, and by no other.
fn cached_across_processes(checkpoint: &str) {
    let m = model("two lattes served");
    let dir = tempfile::tempdir().unwrap();
    let calls = || m.seen.lock().unwrap().len();
    let run_once = |instructions: &str| {
        write(
            dir.path(),
            "team.yaml",
            &cached_team(&m.url, instructions, checkpoint),
        );
        let out = troupe_run(dir.path(), &["run", "--no-input", "team.yaml", "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let first = run_once("serve them");
    assert_eq!(calls(), 1);
    assert!(first.contains("two lattes served"), "{first}");
    // Another process on the same store: the node's result is found.
    let second = run_once("serve them");
    assert_eq!(calls(), 1, "the cached node's model was called again");
    assert!(second.contains("two lattes served"), "{second}");
    // A changed instruction is another config: the node runs again.
    let third = run_once("serve them quickly");
    assert_eq!(calls(), 2);
    assert!(third.contains("two lattes served"), "{third}");
    run_once("serve them quickly");
    assert_eq!(calls(), 2);
}

#[test]
fn a_cached_node_is_not_run_again_by_another_process_until_its_config_changes() {
    cached_across_processes("{store: sqlite, path: state/runs.db}");
    cached_across_processes("{store: dir, path: state}");
}

#[test]
fn a_cached_node_is_found_by_another_process_on_postgres() {
    let Some(url) = common::pg::fresh_db("node_cache") else {
        return;
    };
    cached_across_processes(&format!("{{store: postgres, url: \"{url}\"}}"));
}

#[test]
fn a_cache_key_of_the_nodes_input_runs_it_again_for_another_input() {
    let m = model("served");
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}agents:\n  c: {{model: live}}\nworkflow:\n  graph:\n    nodes: [{{agent: c, cache: {{key: \"{{{{ $input }}}}\"}}}}]\n\
checkpoint: {{store: sqlite, path: runs.db}}\n",
        header(&m.url)
    );
    write(dir.path(), "team.yaml", &yaml);
    let calls = || m.seen.lock().unwrap().len();
    for (task, asked) in [
        ("a latte", 1),
        ("a latte", 1),
        ("a bagel", 2),
        ("a latte", 2),
    ] {
        let out = troupe_run(dir.path(), &["run", "--no-input", "team.yaml", task]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("served"));
        assert_eq!(calls(), asked, "after `{task}`");
    }
}
