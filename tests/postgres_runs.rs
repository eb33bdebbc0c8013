//! Runs on a PostgreSQL store as `troupe runs` lists them from any
//! machine: a served run that failed mid-way is `failed` with its error
//! (not under way), and no other worker on the database takes it over; a
//! forked run is listed with where it was forked from (FORKED FROM).

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{Server, client, json_of, settled};
use common::{text, write};

use std::time::Duration;

use serde_json::json;

/// The planner answers; the writer's model is down (one attempt).
const BROKEN: &str = "version: 1
name: broken
models:
  m: {provider: scripted, replies: [\"outline\"]}
  down: {provider: scripted, retries: 1, when_exhausted: repeat_last, replies: [{error: \"the model is down\"}]}
agents:
  planner: {model: m}
  writer: {model: down}
workflow:
  steps: [{agent: planner}, {agent: writer}]
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

#[test]
fn a_served_run_that_failed_mid_way_is_listed_failed_and_not_taken_over() {
    let Some(url) = common::pg::fresh_db("failedrun") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "broken.yaml", BROKEN);
    let env = [("DATABASE_URL", url.as_str())];
    let a = Server::start(dir.path(), &["broken.yaml"], &env);
    let b = Server::start(dir.path(), &["broken.yaml"], &env);
    let id = json_of(
        client()
            .post(a.url("/runs"))
            .json(&json!({"task": "release notes"}))
            .send()
            .unwrap(),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ended = settled(&a, &id);
    assert_eq!(ended["status"], "failed", "{ended}");
    // The planner's checkpoint was saved before the writer failed.
    let saved = format!("SELECT count(*) FROM troupe_checkpoints WHERE run_id = '{id}'");
    assert!(common::pg::count(&url, &saved) > 0);

    // Listed failed, with its error, from the database alone.
    let cmd_env = |dir: &std::path::Path, args: &[&str]| {
        common::troupe(dir, args)
            .env("DATABASE_URL", &url)
            .output()
            .unwrap()
    };
    let out = cmd_env(dir.path(), &["runs", "broken.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let runs: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let listed_run = runs.iter().find(|r| r["run_id"] == id.as_str()).unwrap();
    assert_eq!(listed_run["status"], "failed", "{listed_run}");
    assert!(
        listed_run["error"]
            .as_str()
            .is_some_and(|e| e.contains("the model is down")),
        "{listed_run}"
    );
    let table = cmd_env(dir.path(), &["runs", "broken.yaml"]);
    let table = text(&table.stdout);
    assert!(
        table.contains("failed") && table.contains("the model is down"),
        "{table}"
    );

    // Two of B's looks for runs to take over pass (one every 5 s): it
    // takes nothing, and the run stays failed.
    std::thread::sleep(Duration::from_secs(11));
    let on_b = client().get(b.url(&format!("/runs/{id}"))).send().unwrap();
    assert_eq!(on_b.status(), 404, "worker B took the failed run over");
    let said: Vec<String> = b.stderr.try_iter().collect();
    assert!(
        !said.iter().any(|l| l.contains("took over")),
        "{}",
        said.join("\n")
    );
    assert_eq!(
        common::pg::count(&url, "SELECT count(*) FROM troupe_run_leases"),
        0
    );
    let failed = format!("SELECT count(*) FROM troupe_run_failures WHERE run_id = '{id}'");
    assert_eq!(common::pg::count(&url, &failed), 1);
}

/// Three steps, a checkpoint after each.
const STEPS: &str = "version: 1
models:
  m: {provider: scripted, replies: [\"unused\"]}
agents:
  planner: {model: m, script: [\"an outline\"]}
  writer: {model: m, script: [\"a draft\"]}
  editor: {model: m, script: [\"edited: looks good\"]}
workflow:
  steps: [{agent: planner}, {agent: writer}, {agent: editor}]
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

#[test]
fn a_fork_on_postgres_is_listed_with_where_it_was_forked_from() {
    let Some(url) = common::pg::fresh_db("forklineage") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "steps.yaml", STEPS);
    // Every command reads the database's URL from the config's `${DATABASE_URL}`.
    let with_url = |args: &[&str]| {
        common::wait(
            common::troupe(dir.path(), args)
                .env("DATABASE_URL", &url)
                .spawn()
                .unwrap(),
            Duration::from_secs(30),
        )
    };
    let out = with_url(&["run", "-q", "--run-id", "orig", "steps.yaml", "write it"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = with_url(&["runs", "show", "steps.yaml", "orig", "--json"]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let checkpoints: Vec<serde_json::Value> = text(&shown.stdout)
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = checkpoints
        .iter()
        .find(|c| c["last_speaker"] == "writer")
        .expect("the checkpoint after the writer");
    let k = at["checkpoint"].as_str().unwrap().to_string();
    let forked = with_url(&[
        "run",
        "-q",
        "steps.yaml",
        "--resume",
        "orig",
        "--at",
        &k,
        "--fork",
        "orig-b",
        "--edit-last",
        "an edited draft",
    ]);
    assert_eq!(forked.status.code(), Some(0), "{}", text(&forked.stderr));

    let table = with_url(&["runs", "steps.yaml"]);
    let table = text(&table.stdout);
    assert!(table.contains("FORKED FROM"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("orig-b "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(&format!("orig@{k}")), "{table}");
    let runs = with_url(&["runs", "steps.yaml", "--json"]);
    let fork = text(&runs.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["run_id"] == "orig-b")
        .unwrap();
    assert_eq!(fork["forked_from"]["run_id"], "orig", "{fork}");
    assert_eq!(fork["forked_from"]["checkpoint"], k.as_str(), "{fork}");
    let lineage =
        "SELECT count(*) FROM troupe_run_lineage WHERE run_id = 'orig-b' AND parent_run = 'orig'";
    assert_eq!(common::pg::count(&url, lineage), 1);
    // The original has none.
    let orig = text(&runs.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["run_id"] == "orig")
        .unwrap();
    assert!(orig["forked_from"].is_null(), "{orig}");
}
