//! Seed 002's several outputs from one turn, resumed: a run whose scout
//! yields three outputs in one turn (`yield_output`), stopped at each of
//! its checkpoints and resumed with the config built afresh (as another
//! process would), ends as the uninterrupted run — each yielded output
//! once, in order, none lost and none repeated — and the model calls are
//! counted once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use troupe::config::{BuildOptions, Config};
use troupe::{RunContext, Thread};

const TEAM: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  scout:
    model: m
    tools: [yield_output]
    script:
      - tool_call: {name: yield_output, arguments: {text: finding one}}
      - tool_call: {name: yield_output, arguments: {text: finding two}}
      - tool_call: {name: yield_output, arguments: {text: finding three}}
      - scouting done
  reader: {model: m, script: [read them]}
  writer: {model: m, script: [wrote it up]}
workflow:
  steps:
    - agent: scout
    - agent: reader
    - agent: writer
checkpoint: {store: sqlite, path: runs.db}
"#;

const YIELDED: [&str; 3] = ["finding one", "finding two", "finding three"];

async fn build(dir: &std::path::Path) -> troupe::config::Built {
    let config = Config::parse(TEAM, dir.join("team.yaml")).unwrap();
    let options = BuildOptions {
        offline: true,
        ..BuildOptions::default()
    };
    config.build(&options).await.unwrap()
}

/// The thread's messages as (source, text).
fn messages(thread: &Thread) -> Vec<(String, String)> {
    thread
        .messages()
        .iter()
        .map(|m| (m.source.to_string(), m.text_content().into_owned()))
        .collect()
}

/// Each yielded output is in `thread` once, in the order yielded, before
/// the scout's own answer.
fn yielded_once_in_order(thread: &Thread, what: &str) {
    let ms = messages(thread);
    let at: Vec<usize> = YIELDED
        .iter()
        .map(|y| {
            let found: Vec<usize> = (0..ms.len()).filter(|&i| ms[i].1 == *y).collect();
            assert_eq!(found.len(), 1, "{what}: `{y}` {found:?} times in {ms:?}");
            found[0]
        })
        .collect();
    assert!(at.is_sorted(), "{what}: {ms:?}");
    let answer = ms.iter().position(|m| m.1 == "scouting done").unwrap();
    assert!(at[2] < answer, "{what}: {ms:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_yielded_in_one_turn_survive_a_resume_from_every_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let first = build(dir.path()).await;
    let whole = first
        .workflow
        .run_task("go", &RunContext::new().with_run_id("whole"))
        .await
        .unwrap();
    yielded_once_in_order(&whole.thread, "uninterrupted");
    let store = first.store.as_ref().unwrap().checkpoints.clone();
    let checkpoints = store.list("whole").await.unwrap();
    assert!(checkpoints.len() >= 3, "{} checkpoints", checkpoints.len());
    first.close().await;
    for (k, cp) in checkpoints.iter().enumerate() {
        let again = build(dir.path()).await;
        let store = again.store.as_ref().unwrap().checkpoints.clone();
        let ctx = RunContext::new().with_run_id(format!("resumed-{k}"));
        let resumed = again
            .workflow
            .run_from_checkpoint(store.as_ref(), "whole", Some(cp.id), &ctx)
            .await
            .unwrap();
        let what = format!("resumed from checkpoint {k} of {}", checkpoints.len());
        yielded_once_in_order(&resumed.thread, &what);
        assert_eq!(messages(&resumed.thread), messages(&whole.thread), "{what}");
        assert_eq!(resumed.final_text(), whole.final_text(), "{what}");
        assert_eq!(
            resumed.stats, whole.stats,
            "{what}: a model call made twice"
        );
        again.close().await;
    }
}
