//! Time travel over HTTP: `POST /runs/{id}/fork` carries a served run on
//! from one of its checkpoints as a new run, its last message edited; the
//! fork runs to its end, says where it came from, both runs are listed by
//! `troupe runs` with their lineage, and the original's rows are byte for
//! byte as they were.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::serve::{Server, client, json_of, settled};
use common::{final_thread, listed, run, text, write};

use serde_json::{Value, json};

const TEAM: &str = "version: 1
name: pages
models:
  m: {provider: scripted}
agents:
  planner: {model: m, script: [\"an outline\"]}
  writer: {model: m, script: [\"a draft\"]}
  editor: {model: m, script: [\"final one\", \"final two\"]}
workflow:
  steps: [{agent: planner}, {agent: writer}, {agent: editor}]
checkpoint: {store: sqlite, path: state/runs.db}
";

/// Every row the SQLite store keeps of run `run_id`, as text.
fn rows(dir: &std::path::Path, run_id: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(dir.join("state/runs.db")).expect("open the db");
    let mut q = conn
        .prepare(
            "SELECT id, parent, created_secs, created_nanos, superstep, topology_hash, \
             format_version, checksum, hex(payload) FROM checkpoints WHERE run_id = ?1 ORDER BY id",
        )
        .expect("query");
    q.query_map([run_id], |r| {
        Ok(format!(
            "{} {:?} {} {} {} {} {} {} {}",
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, i64>(4)?,
            r.get::<_, i64>(5)?,
            r.get::<_, i64>(6)?,
            r.get::<_, i64>(7)?,
            r.get::<_, String>(8)?,
        ))
    })
    .expect("rows")
    .map(|r| r.expect("a row"))
    .collect()
}

#[test]
fn a_served_run_forks_from_a_checkpoint_with_an_edited_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg_path = write(dir.path(), "pages.yaml", TEAM);
    let cfg = cfg_path.to_str().expect("utf-8");
    let s = Server::start(dir.path(), &[cfg], &[]);
    let c = client();
    let started = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "write a page"}))
            .send()
            .unwrap(),
    );
    let id = started["id"].as_str().expect("an id").to_string();
    assert_eq!(settled(&s, &id)["response"], "final one");

    // The checkpoint after the writer, as `troupe runs show` lists it.
    let out = run(dir.path(), &["runs", "show", cfg, &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let k = text(&out.stdout)
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .find(|c| c["last_speaker"] == "writer")
        .and_then(|c| c["checkpoint"].as_str().map(String::from))
        .expect("a checkpoint after the writer");
    let before = rows(dir.path(), &id);

    // Bad requests are refused, naming what is wrong.
    for (body, status, said) in [
        (json!({"checkpoint": "xyz"}), 400, "32 hex digits"),
        (
            json!({"checkpoint": "0".repeat(32)}),
            404,
            "has no checkpoint",
        ),
    ] {
        let r = c
            .post(s.url(&format!("/runs/{id}/fork")))
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), status);
        let body = r.text().unwrap();
        assert!(body.contains(said), "{body}");
    }
    let r = c
        .post(s.url("/runs/nope/fork"))
        .json(&json!({"checkpoint": k}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // The fork: the draft edited, the editor alone runs on.
    let r = c
        .post(s.url(&format!("/runs/{id}/fork")))
        .json(&json!({"checkpoint": k, "message": "an edited draft", "state": {"tone": "dry"}}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let forked = json_of(r);
    let fork_id = forked["id"].as_str().expect("the fork's id").to_string();
    assert_ne!(fork_id, id);
    let from = json!({"run_id": id, "checkpoint": k});
    assert_eq!(forked["forked_from"], from);
    let done = settled(&s, &fork_id);
    assert_eq!(done["status"], "completed", "{done}");
    // Scripted replies count the agent's turns in the thread: the editor's
    // first, again.
    assert_eq!(done["response"], "final one", "{done}");
    assert_eq!(done["forked_from"], from);
    let events = c
        .get(s.url(&format!("/runs/{fork_id}/events")))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let started: Vec<&str> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| d.contains("\"agent_started\""))
        .collect();
    assert!(
        started.len() == 1 && started[0].contains("/editor"),
        "{started:?}"
    );
    let listed_here = json_of(c.get(s.url("/runs")).send().unwrap());
    let fork_listed = listed_here
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["id"] == fork_id.as_str())
        .expect("the fork listed");
    assert_eq!(fork_listed["forked_from"], from);

    // Both lineages in the store, the original untouched.
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs.len(), 2, "{runs:#?}");
    for r in &runs {
        let mut got = r["forked_from"].clone();
        if let Some(o) = got.as_object_mut() {
            o.remove("forked_at");
        }
        let expected = if r["run_id"] == id.as_str() {
            Value::Null
        } else {
            from.clone()
        };
        assert_eq!(got, expected, "{r}");
    }
    assert!(
        rows(dir.path(), &id) == before,
        "the original's rows changed"
    );

    // The fork's thread: the edited draft where the draft was.
    drop(s);
    let texts: Vec<String> = final_thread(&cfg_path, &fork_id)
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(
        texts,
        ["write a page", "an outline", "an edited draft", "final one"]
    );
}
