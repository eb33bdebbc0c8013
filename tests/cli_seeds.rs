//! Seeds 002 and 004 through the binary (issue 43): a first-match
//! `switch:` in a graph, `goto:` in steps, routing by type.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use common::{run, text, write};

/// `triage` says both words: both cases hold.
const SWITCH: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  triage: {model: m, script: ["BILLING and URGENT"]}
  billing: {model: m, script: [billing desk]}
  urgent: {model: m, script: [urgent desk]}
  general: {model: m, script: [general desk]}
workflow:
  graph:
    nodes:
      - agent: triage
        switch:
          cases:
            - {when: {contains: BILLING}, to: billing}
            - {when: {contains: URGENT}, to: urgent}
          default: general
      - billing
      - urgent
      - general
"#;

#[test]
fn a_switch_with_two_true_cases_fires_only_the_first() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "switch.yaml", SWITCH);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "switch.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("billing desk"), "{stdout}");
    assert!(
        !stdout.contains("urgent desk"),
        "the second case fired: {stdout}"
    );
    assert!(
        !stdout.contains("general desk"),
        "the default fired: {stdout}"
    );

    // No case holds: the default.
    let none = SWITCH.replace("BILLING and URGENT", "hello");
    write(dir.path(), "none.yaml", &none);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "none.yaml", "go"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("general desk") && !stdout.contains("billing desk"),
        "{stdout}"
    );
}

#[test]
fn a_transition_beside_a_switch_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let both = format!("{SWITCH}    transitions:\n      - {{from: triage, to: urgent}}\n");
    write(dir.path(), "both.yaml", &both);
    let out = run(dir.path(), &["validate", "both.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("both.yaml:22:10: field `workflow.graph.transitions[0].from`: node `triage` has a `switch:`"),
        "{err}"
    );
    assert!(err.contains("1 problem(s) found"), "{err}");
}

/// A rejected draft is fixed, then `goto: writer` goes back to it.
const GOTO: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [draft one, draft two]}
  critic: {model: m, script: [REJECT, APPROVE]}
  fixer: {model: m, script: [notes fixed]}
  publish: {model: m, script: [published]}
workflow:
  steps:
    - agent: writer
    - agent: critic
    - condition: {contains: REJECT}
      true:
        - agent: fixer
        - goto: writer
    - agent: publish
"#;

#[test]
fn goto_goes_back_to_a_step_by_id_within_the_loop_limit() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "goto.yaml", GOTO);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "goto.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let order: Vec<usize> = [
        "draft one",
        "REJECT",
        "notes fixed",
        "draft two",
        "APPROVE",
        "published",
    ]
    .iter()
    .map(|w| {
        stdout
            .find(w)
            .unwrap_or_else(|| panic!("no `{w}` in {stdout}"))
    })
    .collect();
    assert!(order.is_sorted(), "{order:?}: {stdout}");

    // The critic always rejects: the goto's loop stops at its limit.
    let endless = GOTO
        .replace("[REJECT, APPROVE]", "[REJECT, REJECT, REJECT]")
        .replace("[notes fixed]", "[notes fixed, more fixes]")
        .replace("workflow:\n", "workflow:\n  max_loop_iterations: 1\n");
    write(dir.path(), "endless.yaml", &endless);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "endless.yaml", "go"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("max loop iterations exceeded (step: writer, limit: 1)"),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("published"));
}

#[test]
fn goto_forward_skips_the_steps_between() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: [SKIP please]}
  b: {model: m, script: [b ran]}
  c: {model: m, script: [c ran]}
workflow:
  steps:
    - agent: a
    - condition: {contains: SKIP}
      true:
        - goto: c
    - agent: b
    - agent: c
"#;
    write(dir.path(), "fwd.yaml", yaml);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "fwd.yaml", "go"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("c ran") && !stdout.contains("b ran"),
        "{stdout}"
    );
}

#[test]
fn goto_to_an_unknown_step_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.yaml",
        &GOTO.replace("goto: writer", "goto: writr"),
    );
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "bad.yaml:16:17: field `workflow.steps[2].true[1].goto`: unknown step `writr`"
        ),
        "{err}"
    );
}

/// `talk` answers in text; `classify` in structured output titled
/// `Refund`: each routes by the type of what it said.
const BY_TYPE: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  talk: {model: m, script: [a customer writes]}
  classify:
    model: m
    structured_output:
      title: Refund
      type: object
      properties: {amount: {type: number}}
      required: [amount]
    script:
      - structured: {amount: 3}
  refunds: {model: m, script: [refund desk]}
  complaints: {model: m, script: [complaint desk]}
  handoffs: {model: m, script: [handoff desk]}
workflow:
  graph:
    nodes: [talk, classify, refunds, complaints, handoffs]
    transitions:
      - {from: talk, to: classify, when: {type: text}}
      - {from: talk, to: handoffs, when: {type: handoff}}
      - {from: classify, to: refunds, when: {type: Refund}}
      - {from: classify, to: complaints, when: {type: Complaint}}
"#;

#[test]
fn transitions_route_by_schema_name_and_content_kind() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "type.yaml", BY_TYPE);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "type.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("refund desk"), "{stdout}");
    assert!(
        !stdout.contains("complaint desk") && !stdout.contains("handoff desk"),
        "{stdout}"
    );

    // The same answer under another schema name goes the other way.
    let other = BY_TYPE.replace("title: Refund", "title: Complaint");
    write(dir.path(), "other.yaml", &other);
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "other.yaml", "go"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("complaint desk") && !stdout.contains("refund desk"),
        "{stdout}"
    );

    let empty = BY_TYPE.replace("{type: Complaint}", "{type: \"\"}");
    write(dir.path(), "empty.yaml", &empty);
    let out = run(dir.path(), &["validate", "empty.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `workflow.graph.transitions[3].when.type`: an empty type"),
        "{err}"
    );
}

/// The scout emits a custom event with the `emit_event` tool.
const EMIT: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  scout:
    model: m
    tools: [emit_event]
    script:
      - tool_call: {name: emit_event, arguments: {name: found_lead, data: {score: 7}}}
      - lead reported
workflow:
  graph:
    nodes: [scout]
"#;

#[test]
fn a_custom_event_reaches_the_jsonl_stream_and_the_console() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "emit.yaml", EMIT);
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--events",
            "jsonl",
            "emit.yaml",
            "go",
        ],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let custom: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "custom")
        .collect();
    assert_eq!(custom.len(), 1, "{stdout}");
    assert_eq!(custom[0]["path"], "workflow/scout");
    assert_eq!(custom[0]["name"], "found_lead");
    assert_eq!(custom[0]["data"], serde_json::json!({"score": 7}));

    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "emit.yaml", "go"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("✦ scout: found_lead {\"score\":7}"),
        "{stdout}"
    );
}
