//! An `a2a` participant's failures through the `troupe` binary: an
//! unreachable agent, a malformed card, a remote task that failed, an
//! agent that never answers, a JSON-RPC error — each a named error, exit
//! 1 with a message that says what happened, and no hang — and `a2a:`
//! sections refused with located errors. The remote agents here are tiny
//! HTTP servers on 127.0.0.1 written in the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::a2a::fake_agent;
use common::{run, text, write};

/// A valid card naming `base` as its JSON-RPC endpoint.
fn card(base: &str) -> String {
    format!(
        r#"{{"name":"fake","description":"A fake agent.","supportedInterfaces":[{{"url":"{base}/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}}],"version":"1","capabilities":{{"streaming":false}},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}}"#
    )
}

fn relay(url: &str, extra: &str) -> String {
    format!(
        "version: 1
name: relay
agents:
  remote:
    a2a: {{url: \"{url}\", retry: {{attempts: 2, initial: 10ms}}{extra}}}
workflow:
  steps:
    - agent: remote
"
    )
}

/// Runs the relay team against `url`; its exit code and stderr, checked
/// to have ended within `limit`.
fn fails(url: &str, extra: &str, limit: Duration) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "relay.yaml", &relay(url, extra));
    let start = Instant::now();
    let out = run(dir.path(), &["run", cfg.to_str().unwrap(), "hello"]);
    assert!(start.elapsed() < limit, "took {:?}", start.elapsed());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    text(&out.stderr)
}

#[test]
fn an_unreachable_agent_fails_the_run_after_its_retries() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let err = fails(&url, "", Duration::from_secs(15));
    assert!(
        err.contains(&format!(
            "the A2A agent at {url}/.well-known/agent-card.json is unreachable"
        )),
        "{err}"
    );
    assert!(err.contains("after 2 attempts"), "{err}");
}

#[test]
fn an_agent_that_never_answers_times_out() {
    let base = fake_agent(|_, _, _| None);
    let err = fails(&base, ", timeout: 300ms", Duration::from_secs(15));
    assert!(err.contains("is unreachable"), "{err}");
    assert!(err.contains("did not answer within 300ms"), "{err}");
}

#[test]
fn a_malformed_card_is_named() {
    let base = fake_agent(|_, _, _| Some((200, "application/json", "{\"name\": ".into())));
    let err = fails(&base, "", Duration::from_secs(15));
    assert!(
        err.contains(&format!(
            "the agent card at {base}/.well-known/agent-card.json is malformed: not an agent card"
        )),
        "{err}"
    );

    // JSON, but no endpoint to call.
    let base = fake_agent(|_, _, _| {
        Some((
            200,
            "application/json",
            r#"{"name": "x", "skills": []}"#.into(),
        ))
    });
    let err = fails(&base, "", Duration::from_secs(15));
    assert!(
        err.contains("is malformed: it names no JSON-RPC endpoint"),
        "{err}"
    );
}

#[test]
fn a_failed_remote_task_fails_the_run() {
    // The card is served apart from the endpoint it names.
    let rpc = fake_agent(|method, path, body| {
        match (method, path) {
        ("POST", "/rpc") if body.contains("\"method\":\"SendMessage\"") => Some((
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t-9","contextId":"c-1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"disk full"}]}}}}}"#.into(),
        )),
        _ => Some((404, "text/plain", "no".into())),
    }
    });
    let card_body = card(&rpc);
    let cards = fake_agent(move |_, _, _| Some((200, "application/json", card_body.clone())));
    let err = fails(&cards, "", Duration::from_secs(15));
    assert!(
        err.contains("the remote task t-9 of the A2A agent at")
            && err.contains("ended failed: disk full"),
        "{err}"
    );
}

#[test]
fn a_json_rpc_error_is_quoted() {
    let rpc = fake_agent(|_, _, _| {
        Some((
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"no such method here"}}"#
                .into(),
        ))
    });
    let card_body = card(&rpc);
    let cards = fake_agent(move |_, _, _| Some((200, "application/json", card_body.clone())));
    let err = fails(&cards, "", Duration::from_secs(15));
    assert!(
        err.contains(&format!(
            "the A2A agent at {rpc}/rpc refused SendMessage (error -32601): no such method here"
        )),
        "{err}"
    );
}

#[test]
fn a2a_sections_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "bad.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  remote:
    model: m
    a2a: {url: \"ftp://x\", headers: {\"bad name\": v}, retry: {attempts: 0}}
workflow:
  steps:
    - agent: remote
",
    );
    let out = run(dir.path(), &["validate", cfg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for expected in [
        "an `a2a` agent is answered by the remote agent, not a model: it takes no `model`",
        "`ftp://x` is not an http(s) URL",
        "`bad name` is not a valid HTTP header name",
        "must be at least 1",
    ] {
        assert!(said.contains(expected), "{expected}\n{said}");
    }
    assert!(said.contains("bad.yaml:6:"), "{said}");
}
