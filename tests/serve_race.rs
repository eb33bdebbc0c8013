//! `troupe serve`'s races and its one public route: an answer and a cancel
//! sent together to a run whose answered stretch takes a while end the run
//! `cancelled`, every time (the cancel is 202; the answer 202 when it came
//! first — its stretch is then cancelled — or 409 when the cancel did). At
//! full speed the answered stretch may end first: then the cancel is 409
//! and the run `completed` with its answer. Never both 202 and the run
//! `completed`, as before the fix. And the A2A agent cards answer without
//! the token, which every other route needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::serve::{DESK, Server, client, json_of, settled};
use common::write;
use serde_json::{Value, json};

/// A clerk who asks which order, then (slowly: every call takes 100 ms)
/// answers.
const CLERK: &str = "version: 1
name: clerk
models:
  m: {provider: scripted, delay: 100ms}
agents:
  clerk:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which order?\"}}
      - \"Refunded the order you named.\"
workflow:
  steps:
    - agent: clerk
";

/// The same clerk at full speed: an answered stretch may end before the
/// cancel lands.
const QUICK: &str = "version: 1
name: quick
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which order?\"}}
      - \"Refunded the order you named.\"
workflow:
  steps:
    - agent: clerk
";

/// Polls `GET /runs/{id}` until it waits for input.
fn waiting(s: &Server, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = json_of(client().get(s.url(&format!("/runs/{id}"))).send().unwrap());
        if run["status"] == "waiting_for_input" {
            return;
        }
        assert_eq!(run["status"], "running", "{run}");
        assert!(Instant::now() < deadline, "never asked: {run}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One try: an answer and a cancel sent at once to a run waiting for
/// input; the two statuses and the run as it ended.
fn race(s: &Server) -> (u16, u16, Value) {
    let started = json_of(
        client()
            .post(s.url("/runs"))
            .json(&json!({"task": "refund my order"}))
            .send()
            .unwrap(),
    );
    let id = started["id"].as_str().unwrap().to_string();
    waiting(s, &id);
    let go = Arc::new(Barrier::new(2));
    let (answer_url, cancel_url) = (
        s.url(&format!("/runs/{id}/input")),
        s.url(&format!("/runs/{id}/cancel")),
    );
    let g = go.clone();
    let answer = std::thread::spawn(move || {
        let c = client();
        g.wait();
        c.post(answer_url)
            .json(&json!({"answer": "order 42"}))
            .send()
            .unwrap()
            .status()
            .as_u16()
    });
    let c = client();
    go.wait();
    let cancel = c.post(cancel_url).send().unwrap().status().as_u16();
    let answer = answer.join().unwrap();
    (answer, cancel, settled(s, &id))
}

#[test]
fn an_answer_and_a_cancel_sent_together_end_the_run_cancelled_every_time() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "clerk.yaml", CLERK);
    let s = Server::start(dir.path(), &["clerk.yaml"], &[]);
    let mut answered_first = 0;
    for attempt in 0..50 {
        let (answer, cancel, run) = race(&s);
        let what = format!("try {attempt}: answer {answer}, cancel {cancel}, run {run}");
        assert_eq!(cancel, 202, "{what}");
        assert!(answer == 202 || answer == 409, "{what}");
        assert_eq!(run["status"], "cancelled", "{what}");
        assert_eq!(run["requests"], json!([]), "{what}");
        answered_first += usize::from(answer == 202);
    }
    eprintln!("the answer came first in {answered_first} of 50 tries");
}

#[test]
fn nothing_is_left_half_answered_when_the_answer_is_quicker_than_the_cancel() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "quick.yaml", QUICK);
    let s = Server::start(dir.path(), &["quick.yaml"], &[]);
    for attempt in 0..50 {
        let (answer, cancel, run) = race(&s);
        let what = format!("try {attempt}: answer {answer}, cancel {cancel}, run {run}");
        match (answer, cancel) {
            // The cancel landed (first, or while the answer ran): cancelled.
            (202 | 409, 202) => assert_eq!(run["status"], "cancelled", "{what}"),
            // The answered run was over before the cancel came: answered.
            (202, 409) => {
                assert_eq!(run["status"], "completed", "{what}");
                assert_eq!(run["response"], "Refunded the order you named.", "{what}");
            }
            _ => panic!("{what}"),
        }
        assert_eq!(run["requests"], json!([]), "{what}");
    }
}

#[test]
fn the_agent_card_is_public_and_everything_else_needs_the_token() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml"],
        &[("TROUPE_SERVE_TOKEN", "c4rd")],
    );
    for path in [
        "/.well-known/agent-card.json",
        "/a2a/desk/.well-known/agent-card.json",
    ] {
        let r = client().get(s.url(path)).send().unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let card = json_of(r);
        assert_eq!(card["name"], "desk", "{card}");
        assert_eq!(
            card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
            "{card}"
        );
    }
    let unknown = client()
        .get(s.url("/a2a/nobody/.well-known/agent-card.json"))
        .send()
        .unwrap();
    assert_eq!(unknown.status(), 404);
    // Everything else: 401 without the token, through with it.
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    let refused = [
        client().get(s.url("/runs")).send().unwrap(),
        client().get(s.url("/team")).send().unwrap(),
        client().get(s.url("/v1/models")).send().unwrap(),
        client().post(s.url("/a2a/desk")).json(&rpc).send().unwrap(),
        client().post(s.url("/a2a")).json(&rpc).send().unwrap(),
        client()
            .post(s.url("/.well-known/agent-card.json"))
            .send()
            .unwrap(),
        client()
            .get(s.url("/a2a/desk/x/.well-known/agent-card.json"))
            .send()
            .unwrap(),
    ];
    for r in refused {
        assert_eq!(r.status(), 401, "{}", r.url());
    }
    let ok = client()
        .get(s.url("/runs"))
        .bearer_auth("c4rd")
        .send()
        .unwrap();
    assert_eq!(ok.status(), 200);
}
