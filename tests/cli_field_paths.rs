//! What `troupe validate` says about control flow and field paths that
//! `run` would quietly get wrong (issue 36), through the binary: a
//! `join: all` node waiting for a branch that may never fire, a field read
//! from an agent with no `structured_output`, and one wrong-typed route
//! that no longer hides the others' problems. The configs `validate`
//! refuses outright are in `tests/corpus/trips/`.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use common::{run, text, write};

/// `d` waits for both `b` and `c`, of which only one ever runs.
const JOIN_ALL: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: ["yes"]}
  b: {model: m, script: [two]}
  c: {model: m, script: [three]}
  d: {model: m, script: [joined]}
workflow:
  graph:
    nodes:
      - a
      - b
      - c
      - {agent: d, join: all}
    transitions:
      - {from: a, to: b, when: {contains: "yes"}}
      - {from: a, to: c, when: otherwise}
      - {from: b, to: d}
      - {from: c, to: d}
"#;

#[test]
fn a_join_all_node_with_a_branch_that_may_never_fire_is_warned_of_at_its_join() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "join.yaml", JOIN_ALL);
    let out = run(dir.path(), &["validate", "join.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("join.yaml:15:20: warning: field `workflow.graph.nodes[3].join`: node `d` has `join: all`")
            && err.contains("the one from `b` (transitions[2]) may never fire")
            && err.contains("`join: all_that_can_arrive`"),
        "{err}"
    );
    let out = run(dir.path(), &["validate", "--deny-warnings", "join.yaml"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // `run` says it before the first turn, and does what it said: `d`
    // is skipped.
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "join.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: field `workflow.graph.nodes[3].join`"),
        "{err}"
    );
    assert!(!stdout.contains("joined"), "d ran: {stdout}");

    // The default join runs it.
    let fixed = JOIN_ALL.replace("join: all}", "join: all_that_can_arrive}");
    write(dir.path(), "fixed.yaml", &fixed);
    let out = run(dir.path(), &["validate", "--deny-warnings", "fixed.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "fixed.yaml", "go"],
    );
    assert!(
        text(&out.stdout).contains("joined"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn reading_a_field_of_an_agent_with_no_schema_is_a_located_warning() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "noschema.yaml",
        r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: ['{"ok": true}']}
  b:
    model: m
    instructions: "A said {{ $steps.a.output.ok }}"
    script: [two]
workflow:
  steps:
    - agent: a
    - agent: b
"#,
    );
    let out = run(dir.path(), &["validate", "noschema.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("noschema.yaml:8:30: warning: field `agents.b.instructions`: `$steps.a.output.ok` reads a field of what agent `a` says, but `a` has no `structured_output`"),
        "{err}"
    );
    let out = run(
        dir.path(),
        &["validate", "--deny-warnings", "noschema.yaml"],
    );
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn one_wrong_typed_route_leaves_the_other_routes_checked() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "routes.yaml",
        r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: [one]}
  b: {model: m, script: [two]}
workflow:
  max_turns: 10
  router:
    routes:
      - {from: user, to: a}
      - {from: a, to: [b]}
      - {from: a, to: writer}
      - {from: reader, to: b}
    output: [b]
"#,
    );
    let out = run(dir.path(), &["validate", "routes.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let problems: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("routes.yaml:"))
        .collect();
    assert_eq!(
        problems,
        [
            "routes.yaml:12:23: field `workflow.router.routes[1].to`: wrong type: found a list (expected a string)",
            "routes.yaml:13:23: field `workflow.router.routes[2].to`: unknown agent `writer` in a route (expected one of `a`, `b`)",
            "routes.yaml:14:16: field `workflow.router.routes[3].from`: unknown agent `reader` in a route (expected one of `a`, `b`, `user`, `*`)",
        ],
        "{err}"
    );
}
