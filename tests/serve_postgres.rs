//! Two `troupe serve` processes on one PostgreSQL database (the store
//! `.ci/start-postgres.sh` starts): a session begun on one carries on
//! through the other, and both list it with the same messages; a run
//! whose worker is killed (`kill -9`) is taken over by the other worker
//! from its last checkpoint and completes.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{DESK, Server, client, json_of, settled};
use common::write;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Starts a run of `task` in session `session` on `s`; its settled state.
fn turn(s: &Server, task: &str, session: &str) -> Value {
    let id = json_of(
        client()
            .post(s.url("/runs"))
            .json(&json!({"task": task, "session": session}))
            .send()
            .unwrap(),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    settled(s, &id)
}

#[test]
fn a_session_carries_on_through_another_server_on_the_same_database() {
    let Some(url) = common::pg::fresh_db("serve") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{DESK}checkpoint:\n  store: postgres\n  url: ${{DATABASE_URL}}\n");
    write(dir.path(), "desk.yaml", &config);
    let env = [("DATABASE_URL", url.as_str())];
    let a = Server::start(dir.path(), &["desk.yaml"], &env);
    let b = Server::start(dir.path(), &["desk.yaml"], &env);

    let first = turn(&a, "first", "alice");
    assert_eq!(first["status"], "completed", "{first}");
    let second = turn(&b, "second", "alice");
    assert_eq!(second["status"], "completed", "{second}");

    for s in [&a, &b] {
        let alice = json_of(client().get(s.url("/sessions/alice")).send().unwrap());
        let messages = alice["messages"].as_array().unwrap();
        let users: Vec<&Value> = messages.iter().filter(|m| m["sender"] == "user").collect();
        assert_eq!(users.len(), 2, "{alice}");
        assert_eq!(users[0]["content"], "first");
        assert_eq!(users[1]["content"], "second");
        let list = json_of(client().get(s.url("/sessions")).send().unwrap());
        assert_eq!(list[0]["id"], "alice", "{list}");
        assert_eq!(list[0]["messages"], messages.len(), "{list}");
    }
}

/// Three steps; the writer takes a few seconds.
const SLOW_STEPS: &str = "version: 1
name: notes
models:
  fast: {provider: scripted, replies: [\"outline\"]}
  slow: {provider: scripted, delay: 4s, replies: [\"draft\"]}
agents:
  planner: {model: fast}
  writer: {model: slow}
  editor: {model: fast, script: [\"final: outline and draft\"]}
workflow:
  steps: [{agent: planner}, {agent: writer}, {agent: editor}]
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

#[test]
fn a_run_whose_worker_is_killed_is_taken_over_by_another_worker() {
    let Some(url) = common::pg::fresh_db("takeover") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.yaml", SLOW_STEPS);
    let env = [("DATABASE_URL", url.as_str())];
    let mut a = Server::start(dir.path(), &["notes.yaml"], &env);
    let b = Server::start(dir.path(), &["notes.yaml"], &env);
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
    // The planner's checkpoint is saved, the writer under way: kill -9.
    let saw_planner = Instant::now() + Duration::from_secs(20);
    let saved = format!("SELECT count(*) FROM troupe_checkpoints WHERE run_id = '{id}'");
    while common::pg::count(&url, &saved) == 0 {
        assert!(Instant::now() < saw_planner, "no checkpoint of `{id}`");
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = json_of(client().get(a.url(&format!("/runs/{id}"))).send().unwrap());
    assert_eq!(run["status"], "running", "{run}");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = Instant::now();

    // Worker B takes it over (a dead process of this host: at its next
    // look, every 5 s) and runs it to its end.
    let deadline = killed + Duration::from_secs(40);
    let run = loop {
        let r = client().get(b.url(&format!("/runs/{id}"))).send().unwrap();
        if r.status() == 200 {
            let run = json_of(r);
            if run["status"] != "running" {
                break run;
            }
        }
        if Instant::now() > deadline {
            let said: Vec<String> = b.stderr.try_iter().collect();
            panic!(
                "run `{id}` was not taken over; worker B said:\n{}",
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["response"], "final: outline and draft", "{run}");
    // Taken over within the scan period and the writer's delay.
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
}
