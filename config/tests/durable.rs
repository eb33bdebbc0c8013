//! Durable runs of YAML teams: presets checkpoint every turn to the
//! config's store and resume in a config built afresh; `{{ $steps… }}`
//! values live in each run's thread, so concurrent runs never see each
//! other's, and a session or checkpoint continued elsewhere keeps them.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use troupe_config::{BuildOptions, Built, Config};
use troupe_runtime::{Message, RunContext, RunResult, Session, Thread};

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the test hung")
}

/// `yaml` built afresh, as another process would build it.
async fn build(yaml: &str) -> Built {
    let config = Config::parse(yaml, "team.yaml").unwrap();
    config.build(&BuildOptions::default()).await.unwrap()
}

/// `yaml` with a SQLite checkpoint store in `dir`.
fn with_store(yaml: &str, dir: &Path) -> String {
    format!(
        "{yaml}checkpoint: {{store: sqlite, path: {}}}\n",
        dir.join("runs.db").display()
    )
}

/// Who said what, in order: what two runs must agree on.
fn said(thread: &Thread) -> Vec<(String, String)> {
    thread
        .messages()
        .iter()
        .map(|m| (m.source.to_string(), m.text_content().into_owned()))
        .collect()
}

/// Runs `yaml` (with a store) as run `run`, then resumes it from every
/// checkpoint it left, each time in a config built afresh, and checks
/// each resumed run ends as the whole run did. Returns the whole run and
/// how many checkpoints it left.
async fn resume_from_every_checkpoint(yaml: &str) -> (RunResult, usize) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = with_store(yaml, dir.path());
    let built = build(&yaml).await;
    let whole = guard(
        built
            .workflow
            .run_task("go", &RunContext::new().with_run_id("whole")),
    )
    .await
    .unwrap();
    drop(built);
    let fresh = build(&yaml).await;
    let store = fresh.store.clone().unwrap().checkpoints;
    let checkpoints = store.list("whole").await.unwrap();
    for cp in &checkpoints {
        let built = build(&yaml).await;
        let ctx = RunContext::new().with_run_id(format!("from-{}", cp.id));
        let resumed = guard(built.workflow.run_from_checkpoint(
            store.as_ref(),
            "whole",
            Some(cp.id),
            &ctx,
        ))
        .await
        .unwrap();
        let at = format!("resumed from superstep {}", cp.superstep);
        assert_eq!(resumed.final_text(), whole.final_text(), "{at}");
        assert_eq!(said(&resumed.thread), said(&whole.thread), "{at}");
        assert_eq!(resumed.state(), whole.state(), "{at}");
    }
    (whole, checkpoints.len())
}

/// How many checkpoints a 3-turn round robin leaves in a `dir` store with
/// `durability`.
async fn checkpoints_with(durability: &str) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  writer: {{model: m, script: [first draft, second draft]}}
  critic: {{model: m, script: [shorter please]}}
workflow:
  round_robin: {{participants: [writer, critic]}}
  max_turns: 3
checkpoint: {{store: dir, path: {}, durability: {durability}}}
",
        dir.path().display()
    );
    let built = build(&yaml).await;
    let r = guard(
        built
            .workflow
            .run_task("go", &RunContext::new().with_run_id("r")),
    )
    .await
    .unwrap();
    assert_eq!(r.final_text(), "second draft");
    let store = built.store.clone().unwrap().checkpoints;
    let saved = store.list("r").await.unwrap().len();
    // Whatever was saved resumes to the end.
    let again = guard(build(&yaml).await.workflow.resume("r", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(said(&again.thread), said(&r.thread));
    saved
}

#[tokio::test]
async fn durability_is_chosen_in_the_config() {
    let process = checkpoints_with("process").await;
    assert!(process >= 3, "{process}");
    assert_eq!(checkpoints_with("fsync").await, process);
    assert_eq!(checkpoints_with("exit").await, 1);
}

#[tokio::test]
async fn a_round_robin_team_checkpoints_every_turn_and_resumes_from_each() {
    let yaml = "version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [first draft, second draft]}
  critic: {model: m, script: [shorter please]}
workflow:
  round_robin: {participants: [writer, critic]}
  max_turns: 3
";
    let (whole, checkpoints) = resume_from_every_checkpoint(yaml).await;
    assert_eq!(whole.final_text(), "second draft");
    assert_eq!(whole.turns, 3);
    assert!(checkpoints >= 3, "{checkpoints} checkpoints for 3 turns");
}

#[tokio::test]
async fn a_graph_loop_reading_steps_resumes_from_every_checkpoint_in_a_fresh_build() {
    let yaml = "version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [draft 1, draft 2, draft 3]}
  qa: {model: m, script: ['{\"ok\": false}', '{\"ok\": false}', '{\"ok\": true}']}
  publisher:
    model: m
    instructions: 'Publish {{ $steps.writer.output }}'
    script: [published]
workflow:
  graph:
    nodes: [writer, qa, publisher]
    transitions:
      - {from: writer, to: qa}
      - {from: qa, to: writer, when: '{{ $steps.qa.output.ok }} == false', loop: true, max_iterations: 5}
      - {from: qa, to: publisher, when: otherwise}
";
    let (whole, checkpoints) = resume_from_every_checkpoint(yaml).await;
    assert_eq!(whole.final_text(), "published");
    assert_eq!(
        whole.turns, 7,
        "three drafts, three reviews, one publication"
    );
    assert!(checkpoints >= 7, "{checkpoints} checkpoints");
    assert_eq!(whole.state().get("steps.writer.output"), Some("draft 3"));
    assert_eq!(whole.state().get("steps.qa.agent"), Some("qa"));
}

/// `first` runs `a`, then `wait` (slow); `wait` goes to `yes` when `a`
/// said `alpha`, else to `no`. `a` says `alpha` in a fresh conversation,
/// `beta` in one where it spoke before.
const RACE: &str = "version: 1
models:
  m: {provider: scripted}
  slow: {provider: scripted, delay: 300ms, when_exhausted: repeat_last}
agents:
  a: {model: m, script: [alpha, beta]}
  wait: {model: slow, script: [waited]}
  yes: {model: m, script: [saw alpha]}
  no: {model: m, script: [saw beta]}
workflow:
  graph:
    nodes: [a, wait, yes, no]
    transitions:
      - {from: a, to: wait}
      - {from: wait, to: yes, when: '{{ $steps.a.output }} == alpha'}
      - {from: wait, to: no, when: otherwise}
";

#[tokio::test]
async fn concurrent_runs_of_one_built_config_see_only_their_own_steps() {
    let built = build(RACE).await;
    let workflow = built.workflow.clone();
    // A conversation in which `a` spoke before: it says `beta` next.
    let mut earlier = guard(workflow.run_task("one", &RunContext::new()))
        .await
        .unwrap()
        .thread;
    earlier.push(Message::user("two"));
    // The fresh run records `alpha` and waits; meanwhile the other
    // records `beta`. Each must judge by its own.
    let fresh = {
        let w = workflow.clone();
        tokio::spawn(async move { w.run_task("fresh", &RunContext::new()).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let again = {
        let w = workflow.clone();
        tokio::spawn(async move { w.run(earlier, &RunContext::new()).await })
    };
    let fresh = guard(fresh).await.unwrap().unwrap();
    let again = guard(again).await.unwrap().unwrap();
    assert_eq!(fresh.final_text(), "saw alpha");
    assert_eq!(again.final_text(), "saw beta");
    assert_eq!(fresh.state().get("steps.a.output"), Some("alpha"));
    assert_eq!(again.state().get("steps.a.output"), Some("beta"));
}

#[tokio::test]
async fn a_session_continued_with_a_fresh_build_keeps_its_steps() {
    // `check` greets once per conversation: the second message finds
    // `greet`'s output from the first in the conversation's state.
    let yaml = "version: 1
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  check: {model: m, script: [checking]}
  greet: {model: m, script: [hello]}
  known: {model: m, script: [welcome back]}
workflow:
  graph:
    nodes: [check, greet, known]
    transitions:
      - {from: check, to: greet, when: '{{ $steps.greet.output }} != hello'}
      - {from: check, to: known, when: otherwise}
";
    let dir = tempfile::tempdir().unwrap();
    let yaml = with_store(yaml, dir.path());
    let first = build(&yaml).await;
    let session = Session::new(
        first.workflow.clone(),
        first.store.as_ref().unwrap().threads.clone(),
    );
    let reply = guard(session.send("chat", "hi")).await.unwrap();
    assert_eq!(reply.final_text(), "hello");
    drop((session, first));
    // As `troupe chat --session chat` in a new process: built afresh.
    let second = build(&yaml).await;
    let session = Session::new(
        second.workflow.clone(),
        second.store.as_ref().unwrap().threads.clone(),
    );
    let reply = guard(session.send("chat", "hi again")).await.unwrap();
    assert_eq!(reply.final_text(), "welcome back");
    let other = guard(session.send("another", "hi")).await.unwrap();
    assert_eq!(
        other.final_text(),
        "hello",
        "another conversation has its own steps"
    );
}
