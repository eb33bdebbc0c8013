//! Double texting: a second message to a session whose run is still going,
//! under each policy (`reject`, `enqueue`, `interrupt`, `rollback`), over
//! the runs API and the OpenAI endpoint, as a client sends it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::serve::{Server, client, json_of, settled};
use common::write;
use serde_json::{Value, json};

/// Two steps of 1.5 s each: a run is under way for 3 s.
const PAIR: &str = "version: 1
name: pair
models:
  m: {provider: scripted, delay: 1500ms, when_exhausted: repeat_last}
agents:
  first: {model: m, script: [\"first says\"]}
  second: {model: m, script: [\"second says\"]}
workflow:
  steps:
    - agent: first
    - agent: second
";

fn serve(extra: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pair.yaml", &format!("{PAIR}{extra}"));
    let s = Server::start(dir.path(), &["pair.yaml"], &[]);
    (dir, s)
}

/// `POST /runs` in session `s`, with a policy if given.
fn post_run(s: &Server, task: &str, policy: Option<&str>) -> reqwest::blocking::Response {
    let mut body = json!({"task": task, "session": "s"});
    if let Some(p) = policy {
        body["double_texting"] = json!(p);
    }
    client().post(s.url("/runs")).json(&body).send().unwrap()
}

/// The session's messages as `sender: content`.
fn session(s: &Server) -> Vec<String> {
    let v = json_of(client().get(s.url("/sessions/s")).send().unwrap());
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["sender"].as_str().unwrap(),
                m["content"].as_str().unwrap()
            )
        })
        .collect()
}

/// Waits until run `id` is well into its first turn (0.5 s of 1.5 s).
fn under_way(s: &Server, id: &str) {
    std::thread::sleep(Duration::from_millis(500));
    let run = json_of(client().get(s.url(&format!("/runs/{id}"))).send().unwrap());
    assert_eq!(run["status"], "running", "{run}");
}

fn id_of(r: reqwest::blocking::Response) -> String {
    assert_eq!(r.status(), 201);
    json_of(r)["id"].as_str().unwrap().to_string()
}

fn status(s: &Server, id: &str) -> Value {
    settled(s, id)["status"].clone()
}

const ONE_TURN: [&str; 3] = ["user: one", "first: first says", "second: second says"];
const TWO_TURN: [&str; 3] = ["user: two", "first: first says", "second: second says"];

#[test]
fn runs_api_reject_is_409_from_the_teams_config_and_the_run_goes_on() {
    let (_d, s) = serve("serve: {double_texting: reject}\n");
    let first = id_of(post_run(&s, "one", None));
    under_way(&s, &first);
    let r = post_run(&s, "two", None);
    assert_eq!(r.status(), 409);
    let err = json_of(r);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("double_texting: reject"),
        "{err}"
    );
    // A request may ask for another policy than the team's.
    let third = id_of(post_run(&s, "three", Some("enqueue")));
    assert_eq!(status(&s, &first), "completed");
    assert_eq!(status(&s, &third), "completed");
    let msgs = session(&s);
    assert_eq!(msgs[..3], ONE_TURN, "{msgs:?}");
    assert_eq!(msgs[3], "user: three", "{msgs:?}");
    assert_eq!(msgs.len(), 6, "{msgs:?}");
}

#[test]
fn runs_api_enqueue_runs_the_second_after_the_first() {
    let (_d, s) = serve("");
    let first = id_of(post_run(&s, "one", None));
    under_way(&s, &first);
    let second = id_of(post_run(&s, "two", Some("enqueue")));
    assert_eq!(status(&s, &first), "completed");
    assert_eq!(status(&s, &second), "completed");
    let msgs = session(&s);
    assert_eq!(msgs, [ONE_TURN, TWO_TURN].concat(), "{msgs:?}");
}

#[test]
fn runs_api_interrupt_stops_the_first_keeping_its_work() {
    let (_d, s) = serve("");
    let first = id_of(post_run(&s, "one", None));
    under_way(&s, &first);
    let second = id_of(post_run(&s, "two", Some("interrupt")));
    assert_eq!(status(&s, &first), "interrupted");
    assert_eq!(status(&s, &second), "completed");
    let msgs = session(&s);
    // The first run's finished turn is kept; its second step never ran.
    assert_eq!(msgs[..2], ONE_TURN[..2], "{msgs:?}");
    assert_eq!(msgs[2..], TWO_TURN, "{msgs:?}");
}

#[test]
fn runs_api_rollback_cancels_the_first_and_drops_it() {
    let (_d, s) = serve("");
    let first = id_of(post_run(&s, "one", None));
    under_way(&s, &first);
    let second = id_of(post_run(&s, "two", Some("rollback")));
    assert_eq!(status(&s, &first), "cancelled");
    assert_eq!(status(&s, &second), "completed");
    assert_eq!(session(&s), TWO_TURN);
}

#[test]
fn an_unknown_policy_is_400() {
    let (_d, s) = serve("");
    let r = post_run(&s, "one", Some("shout"));
    assert_eq!(r.status(), 400);
    let r = chat(&s, "one", Some("shout"));
    assert_eq!(r.status(), 400);
}

/// A chat completion in session `s`, with a policy header if given.
fn chat(s: &Server, text: &str, policy: Option<&str>) -> reqwest::blocking::Response {
    let mut req = client()
        .post(s.url("/v1/chat/completions"))
        .header("x-troupe-session", "s")
        .json(&json!({"model": "pair", "messages": [{"role": "user", "content": text}]}));
    if let Some(p) = policy {
        req = req.header("x-troupe-double-texting", p);
    }
    req.send().unwrap()
}

/// The first chat of session `s` on a thread of its own, once it is under
/// way: its run id, and the thread's answer.
fn first_chat(s: &Server) -> std::thread::JoinHandle<(u16, String)> {
    let (base, before) = (s.base.clone(), Instant::now());
    let h = std::thread::spawn(move || {
        let r = client()
            .post(format!("{base}/v1/chat/completions"))
            .header("x-troupe-session", "s")
            .json(&json!({"model": "pair", "messages": [{"role": "user", "content": "one"}]}))
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    });
    // Under way: its run is listed, running.
    loop {
        let runs = json_of(client().get(s.url("/runs")).send().unwrap());
        if runs.as_array().is_some_and(|a| !a.is_empty()) {
            under_way(s, runs[0]["id"].as_str().unwrap());
            break;
        }
        assert!(before.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    h
}

/// The id of the oldest run listed (the first chat's).
fn first_run(s: &Server) -> String {
    let runs = json_of(client().get(s.url("/runs")).send().unwrap());
    let all = runs.as_array().unwrap();
    all.last().unwrap()["id"].as_str().unwrap().to_string()
}

fn content(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn openai_reject_is_409() {
    let (_d, s) = serve("");
    let first = first_chat(&s);
    let r = chat(&s, "two", Some("reject"));
    assert_eq!(r.status(), 409);
    let (code, body) = first.join().unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(content(&body), "second says");
    assert_eq!(session(&s), ONE_TURN);
}

#[test]
fn openai_enqueue_answers_both_in_turn() {
    let (_d, s) = serve("");
    let first = first_chat(&s);
    let r = chat(&s, "two", Some("enqueue"));
    assert_eq!(r.status(), 200);
    assert_eq!(content(&r.text().unwrap()), "second says");
    let (code, _) = first.join().unwrap();
    assert_eq!(code, 200);
    assert_eq!(session(&s), [ONE_TURN, TWO_TURN].concat());
}

#[test]
fn openai_interrupt_stops_the_first_keeping_its_work() {
    let (_d, s) = serve("");
    let first = first_chat(&s);
    let r = chat(&s, "two", Some("interrupt"));
    assert_eq!(r.status(), 200);
    first.join().unwrap();
    assert_eq!(status(&s, &first_run(&s)), "interrupted");
    let msgs = session(&s);
    assert_eq!(msgs[..2], ONE_TURN[..2], "{msgs:?}");
    assert_eq!(msgs[2..], TWO_TURN, "{msgs:?}");
}

#[test]
fn openai_rollback_cancels_the_first_and_drops_it() {
    let (_d, s) = serve("");
    let first = first_chat(&s);
    let r = chat(&s, "two", Some("rollback"));
    assert_eq!(r.status(), 200);
    assert_eq!(content(&r.text().unwrap()), "second says");
    first.join().unwrap();
    assert_eq!(status(&s, &first_run(&s)), "cancelled");
    assert_eq!(session(&s), TWO_TURN);
}

/// An A2A `SendMessage` in context `s`, answered at once, with a policy in
/// its metadata if given.
fn a2a_send(s: &Server, text: &str, policy: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("m-{text}"),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "contextId": "s",
    });
    if let Some(p) = policy {
        message["metadata"] = json!({"troupe.double_texting": p});
    }
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": true}},
    });
    json_of(
        client()
            .post(s.url("/a2a/pair"))
            .json(&body)
            .send()
            .unwrap(),
    )
}

#[test]
fn a2a_reject_is_an_error_and_rollback_drops_the_first() {
    let (_d, s) = serve("");
    let first = a2a_send(&s, "one", None);
    assert!(first["error"].is_null(), "{first}");
    let first_id = first_run(&s);
    under_way(&s, &first_id);
    let refused = a2a_send(&s, "two", Some("reject"));
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("double_texting: reject"),
        "{refused}"
    );
    let second = a2a_send(&s, "two", Some("rollback"));
    assert!(second["error"].is_null(), "{second}");
    assert_eq!(status(&s, &first_id), "cancelled");
    let runs = json_of(client().get(s.url("/runs")).send().unwrap());
    let newest = runs[0]["id"].as_str().unwrap().to_string();
    assert_eq!(status(&s, &newest), "completed");
    assert_eq!(session(&s), TWO_TURN);
}
