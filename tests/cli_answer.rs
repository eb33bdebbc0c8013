//! `answer:` names the agent(s) whose words are the team's answer, in
//! every kind of workflow: `troupe run --quiet` prints the writer's poem,
//! not the critic's `APPROVE`; a step id or a graph node answers the same
//! way, and so does a router's participant; a name that is not a
//! participant is refused with its place in the file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::{run, text, write};

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/configs")
        .join(name)
        .display()
        .to_string()
}

/// The final response `troupe run --quiet` prints for `cfg`.
fn answer(dir: &std::path::Path, cfg: &str) -> String {
    let out = run(dir, &["run", cfg, "a poem about actors", "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

#[test]
fn the_round_robin_example_answers_with_the_poem() {
    let dir = tempfile::tempdir().unwrap();
    let said = answer(dir.path(), &example("round_robin.yaml"));
    assert_eq!(
        said,
        "Each actor keeps an inbox, reads one letter at a time;\nno locks, no shared pen: just messages in line."
    );
}

const STEPS: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [\"A draft.\"]}
  editor:
    model: m
    structured_output: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
    script: [{structured: {approved: true}}]
workflow:
  answer: draft
  max_loop_iterations: 3
  steps:
    - {id: draft, agent: writer}
    - {id: review, agent: editor}
    - condition: \"{{ $steps.review.output.approved }}\"
      false: draft
";

const GRAPH: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [\"The text.\"]}
  checker: {model: m, script: [\"LGTM\"]}
workflow:
  answer: [writer]
  graph:
    nodes: [writer, checker]
    transitions:
      - {from: writer, to: checker}
";

const ROUTER: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  front: {model: m, script: [\"passed on\"]}
  back: {model: m, script: [\"the result\"]}
  log: {model: m, script: [\"logged\"]}
workflow:
  answer: back
  router:
    routes:
      - {from: user, to: front}
      - {from: front, to: back}
      - {from: back, to: log}
    output: [log]
";

#[test]
fn steps_graphs_and_routers_answer_with_the_named_agent() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "steps.yaml", STEPS);
    write(dir.path(), "graph.yaml", GRAPH);
    write(dir.path(), "router.yaml", ROUTER);
    assert_eq!(answer(dir.path(), "steps.yaml"), "A draft.");
    assert_eq!(answer(dir.path(), "graph.yaml"), "The text.");
    assert_eq!(answer(dir.path(), "router.yaml"), "the result");
}

#[test]
fn an_answer_that_is_not_a_participant_is_refused_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let bad = GRAPH.replace("answer: [writer]", "answer: [writer, nobody]");
    write(dir.path(), "bad.yaml", &bad);
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("bad.yaml:8:"), "{err}");
    assert!(err.contains("workflow.answer[1]"), "{err}");
    assert!(
        err.contains("`nobody` is not a participant of this workflow"),
        "{err}"
    );
    assert!(err.contains("expected one of `writer`, `checker`"), "{err}");
}
