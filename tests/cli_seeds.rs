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
