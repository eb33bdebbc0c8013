//! Two `troupe serve` processes on one PostgreSQL database (the store
//! `.ci/start-postgres.sh` starts): a session begun on one carries on
//! through the other, and both list it with the same messages.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{DESK, Server, client, json_of, settled};
use common::write;

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
