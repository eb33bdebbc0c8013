//! `troupe serve`'s safety rules, as a client meets them: no exposed bind
//! without a token, the token on every route, the body and run limits,
//! CORS only when asked, and a graceful shutdown that checkpoints the runs
//! under way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::serve::{DESK, SLOW, Server, client, frames, json_of};
use common::{text, troupe, wait, write};
use serde_json::{Value, json};

/// Two steps of 1.5 s each, checkpointed in SQLite.
const DURABLE: &str = "version: 1
name: durable
models:
  m: {provider: scripted, delay: 1500ms, when_exhausted: repeat_last}
agents:
  first: {model: m, script: [\"one\"]}
  second: {model: m, script: [\"two\"]}
workflow:
  steps:
    - agent: first
    - agent: second
checkpoint: {store: sqlite, path: state/runs.db}
";

#[test]
fn a_non_loopback_bind_without_a_token_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let out = wait(
        troupe(dir.path(), &["serve", "desk.yaml", "--listen", "0.0.0.0:0"])
            .env_remove("TROUPE_SERVE_TOKEN")
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without a token"),
        "{err}"
    );
    assert!(err.contains("TROUPE_SERVE_TOKEN"), "{err}");
}

#[test]
fn every_route_needs_the_token_when_one_is_set() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml"],
        &[("TROUPE_SERVE_TOKEN", "t0ken")],
    );
    let c = client();
    let gets = [
        "/",
        "/console/app.js",
        "/team",
        "/v1/models",
        "/runs",
        "/runs/x",
        "/runs/x/events",
        "/sessions",
        "/sessions/x",
        "/nowhere",
    ];
    let posts = [
        "/v1/chat/completions",
        "/runs",
        "/runs/x/input",
        "/runs/x/cancel",
    ];
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer t0ke"),
        Some("t0ken"),
    ] {
        let with = |r: reqwest::blocking::RequestBuilder| match auth {
            Some(a) => r.header("Authorization", a),
            None => r,
        };
        for p in gets {
            let r = with(c.get(s.url(p))).send().unwrap();
            assert_eq!(r.status(), 401, "GET {p} with {auth:?}");
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
            assert_eq!(json_of(r)["error"]["type"], "authentication_error");
        }
        for p in posts {
            let r = with(c.post(s.url(p)).body("{}")).send().unwrap();
            assert_eq!(r.status(), 401, "POST {p} with {auth:?}");
        }
    }
    // A token in the query opens no API route; the console's page and
    // assets only (a browser opens them from a link).
    assert_eq!(
        c.get(s.url("/team?token=t0ken")).send().unwrap().status(),
        401
    );
    for page in ["/?token=t0ken", "/console/app.js?token=t0ken"] {
        assert_ne!(c.get(s.url(page)).send().unwrap().status(), 401, "{page}");
    }
    assert_eq!(c.post(s.url("/?token=t0ken")).send().unwrap().status(), 401);
    let ok = c.get(s.url("/team")).bearer_auth("t0ken").send().unwrap();
    assert_eq!(ok.status(), 200);
    let r = c
        .post(s.url("/v1/chat/completions"))
        .bearer_auth("t0ken")
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[test]
fn an_oversized_body_is_413_and_runs_beyond_the_limit_are_429() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "slow.yaml", SLOW);
    let s = Server::start(
        dir.path(),
        &["slow.yaml", "--max-body", "1000", "--max-runs", "1"],
        &[],
    );
    let c = client();
    let big = json!({"task": "x".repeat(2000)});
    let r = c.post(s.url("/runs")).json(&big).send().unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(json_of(r)["error"]["type"], "request_too_large");
    let r = c
        .post(s.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "y".repeat(2000)}]}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 413);
    let first = c
        .post(s.url("/runs"))
        .json(&json!({"task": "go"}))
        .send()
        .unwrap();
    assert_eq!(first.status(), 201);
    let second = c
        .post(s.url("/runs"))
        .json(&json!({"task": "go"}))
        .send()
        .unwrap();
    assert_eq!(second.status(), 429);
    assert!(
        json_of(second)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-runs")
    );
    let bad = c.post(s.url("/runs")).body("not json").send().unwrap();
    assert_eq!(bad.status(), 400);
}

#[test]
fn cors_is_off_unless_an_origin_is_given() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let c = client();
    let off = Server::start(dir.path(), &["desk.yaml"], &[]);
    let r = c
        .get(off.url("/team"))
        .header("Origin", "https://a.example")
        .send()
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let on = Server::start(
        dir.path(),
        &["desk.yaml", "--cors", "https://a.example"],
        &[],
    );
    let r = c
        .get(on.url("/team"))
        .header("Origin", "https://a.example")
        .send()
        .unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://a.example"
    );
    let pre = c
        .request(reqwest::Method::OPTIONS, on.url("/v1/chat/completions"))
        .header("Origin", "https://a.example")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .unwrap();
    assert!(pre.status().is_success());
    assert!(
        pre.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    let other = c
        .get(on.url("/team"))
        .header("Origin", "https://evil.example")
        .send()
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

#[test]
fn sigterm_stops_accepting_checkpoints_the_runs_under_way_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "durable.yaml", DURABLE);
    let mut s = Server::start(dir.path(), &["durable.yaml"], &[]);
    let c = client();
    let id = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "go"}))
            .send()
            .unwrap(),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let events = c.get(s.url(&format!("/runs/{id}/events"))).send().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // No new connection is taken while the run finishes its turn.
    std::thread::sleep(Duration::from_millis(200));
    assert!(c.get(s.url("/runs")).send().is_err(), "still accepting");
    // The stream open on the run ends with it: interrupted, after the
    // first turn finished.
    let all = frames(events);
    let end: Value = serde_json::from_str(&all.last().unwrap().data).unwrap();
    assert_eq!(end["status"], "interrupted", "{end}");
    let t = Instant::now();
    let code = loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
    let said: Vec<String> = s.stderr.try_iter().collect();
    assert!(said.iter().any(|l| l.contains("stopping")), "{said:?}");
    // The checkpoint carries the run on, from the second step.
    let resumed = common::run(dir.path(), &["run", "-q", "durable.yaml", "--resume", &id]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout).trim(), "two");
}
