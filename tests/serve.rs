//! `troupe serve` through HTTP, as a client uses it: the runs API (start,
//! live events resumed with Last-Event-ID, status, answering a question,
//! cancelling), stored sessions, the OpenAI endpoint streamed and not, the
//! team's description, and the safety rules (no exposed bind without a
//! token, the token on every route, the body limit, the run limit).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::serve::Server;
use common::{text, troupe, wait, write};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

/// Two scripted agents in sequence; the editor's reply is the answer.
const DESK: &str = "version: 1
name: desk
description: A writer and an editor.
models:
  m: {provider: auto, model: gpt-test, api_key_env: NEVER_SHOWN_KEY, headers: {X-Team-Secret: shh-header-value}}
agents:
  writer:
    description: Drafts.
    model: m
    tools: [calculator]
    script:
      - tool_call: {name: calculator, arguments: {expression: \"6 * 7\"}}
      - \"draft one\"
      - \"draft two\"
      - \"draft three\"
  editor:
    model: m
    script: [\"final one\", \"final two\", \"final three\"]
workflow:
  steps:
    - agent: writer
    - agent: editor
";

/// A clerk that asks the user a question before answering.
const ASKING: &str = "version: 1
name: asking
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

/// Every turn takes 5 s: a run to cancel.
const SLOW: &str = "version: 1
name: slow
models:
  m: {provider: scripted, delay: 5s, when_exhausted: repeat_last}
agents:
  sloth:
    model: m
    script: [\"at last\"]
workflow:
  steps:
    - agent: sloth
";

fn client() -> Client {
    // reqwest is built without a bundled crypto provider (plain HTTP here).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn json_of(r: Response) -> Value {
    let status = r.status();
    let body = r.text().unwrap();
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"))
}

/// Polls `GET /runs/{id}` until its status is not `running`.
fn settled(s: &Server, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = json_of(client().get(s.url(&format!("/runs/{id}"))).send().unwrap());
        if run["status"] != "running" {
            return run;
        }
        assert!(Instant::now() < deadline, "run never settled: {run}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One SSE frame: its fields by name (data lines joined).
#[derive(Debug, Default)]
struct Frame {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// Every frame of an SSE response, to its end.
fn frames(r: Response) -> Vec<Frame> {
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut out = Vec::new();
    let mut cur = Frame::default();
    for line in BufReader::new(r).lines() {
        let line = line.unwrap();
        if line.is_empty() {
            if cur.id.is_some() || cur.event.is_some() || !cur.data.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("data: ") {
            if !cur.data.is_empty() {
                cur.data.push('\n');
            }
            cur.data.push_str(v);
        } else if let Some(v) = line.strip_prefix("id: ") {
            cur.id = Some(v.into());
        } else if let Some(v) = line.strip_prefix("event: ") {
            cur.event = Some(v.into());
        }
    }
    out
}

#[test]
fn a_run_streams_its_events_resumes_after_last_event_id_and_reports_its_result() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    let c = client();
    let started = c
        .post(s.url("/runs"))
        .json(&json!({"task": "write a line"}))
        .send()
        .unwrap();
    assert_eq!(started.status(), 201);
    let started = json_of(started);
    assert_eq!(started["status"], "running");
    let id = started["id"].as_str().unwrap().to_string();

    let all = frames(c.get(s.url(&format!("/runs/{id}/events"))).send().unwrap());
    let end = all.last().unwrap();
    assert_eq!(end.event.as_deref(), Some("end"));
    let end: Value = serde_json::from_str(&end.data).unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["response"], "final one");
    let events: Vec<(usize, Value)> = all
        .iter()
        .filter(|f| f.event.is_none())
        .map(|f| {
            (
                f.id.as_deref().unwrap().parse().unwrap(),
                serde_json::from_str(&f.data).unwrap(),
            )
        })
        .collect();
    // Ids count from 0 without a gap; each data is an `--events jsonl` line.
    for (i, (n, e)) in events.iter().enumerate() {
        assert_eq!(*n, i);
        assert_eq!(e["run_id"], id.as_str());
        assert!(
            e["type"].is_string() && e["seq"].is_u64() && e["time"].is_string(),
            "{e}"
        );
    }
    let types: Vec<&str> = events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"tool_call"), "{types:?}");
    assert_eq!(*types.last().unwrap(), "run_finished", "{types:?}");

    // Resumed after event 2: the rest only, the same ids and lines.
    let resumed = frames(
        c.get(s.url(&format!("/runs/{id}/events")))
            .header("Last-Event-ID", "2")
            .send()
            .unwrap(),
    );
    let rest: Vec<&Frame> = resumed.iter().filter(|f| f.event.is_none()).collect();
    assert_eq!(rest.len(), events.len() - 3);
    assert_eq!(rest[0].id.as_deref(), Some("3"));
    assert_eq!(rest[0].data, all[3].data);
    assert_eq!(resumed.last().unwrap().event.as_deref(), Some("end"));

    let run = settled(&s, &id);
    assert_eq!(run["response"], "final one");
    assert!(run["usage"]["total_tokens"].as_u64().unwrap() > 0, "{run}");
    assert_eq!(run["error"], Value::Null);
    let listed = json_of(c.get(s.url("/runs")).send().unwrap());
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["task"], "write a line");
    let missing = c.get(s.url("/runs/nope")).send().unwrap();
    assert_eq!(missing.status(), 404);
    assert!(
        json_of(missing)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
}

#[test]
fn a_question_is_answered_over_http_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", ASKING);
    let s = Server::start(dir.path(), &["asking.yaml"], &[]);
    let c = client();
    let id = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "I was charged twice"}))
            .send()
            .unwrap(),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = settled(&s, &id);
    assert_eq!(run["status"], "waiting_for_input", "{run}");
    let q = &run["requests"][0];
    assert_eq!(q["question"], "Which order?");
    assert!(q["id"].as_str().unwrap().contains("clerk"), "{q}");
    // A second answer before the run waits again is refused; a wrong id too.
    let wrong = c
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"request_id": "nobody", "answer": "x"}))
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 404);
    // A stream opened while the run waits stays open through the answer.
    let live = c.get(s.url(&format!("/runs/{id}/events"))).send().unwrap();
    let live = std::thread::spawn(move || frames(live));
    std::thread::sleep(Duration::from_millis(200));
    let answered = c
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"request_id": q["id"], "answer": "order A-1001"}))
        .send()
        .unwrap();
    assert_eq!(answered.status(), 202);
    let live = live.join().unwrap();
    let marks: Vec<(&str, String)> = live
        .iter()
        .filter_map(|f| {
            let e = f.event.as_deref()?;
            let v: Value = serde_json::from_str(&f.data).unwrap();
            Some((e, v["status"].as_str().unwrap().to_string()))
        })
        .collect();
    // Waiting, then (unless the run finished before the stream looked)
    // running again, then the end.
    assert_eq!(
        marks[0],
        ("status", "waiting_for_input".to_string()),
        "{marks:?}"
    );
    assert_eq!(
        marks[marks.len() - 1],
        ("end", "completed".to_string()),
        "{marks:?}"
    );
    assert!(
        marks[1..marks.len() - 1].is_empty()
            || marks[1..marks.len() - 1] == [("status", "running".to_string())],
        "{marks:?}"
    );
    let ids: Vec<usize> = live
        .iter()
        .filter_map(|f| f.id.as_deref()?.parse().ok())
        .collect();
    assert_eq!(
        ids,
        (0..ids.len()).collect::<Vec<_>>(),
        "ids without a gap across the answer"
    );
    let run = settled(&s, &id);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["response"], "Refunded the order you named.");
    let again = c
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"answer": "again"}))
        .send()
        .unwrap();
    assert_eq!(again.status(), 409);
    // The events tell the whole story: the question, then the answer's turn.
    let all = frames(c.get(s.url(&format!("/runs/{id}/events"))).send().unwrap());
    let data: Vec<Value> = all
        .iter()
        .filter(|f| f.event.is_none())
        .map(|f| serde_json::from_str(&f.data).unwrap())
        .collect();
    assert!(
        data.iter().any(|e| e["type"] == "input_requested"),
        "{data:?}"
    );
    assert_eq!(data.last().unwrap()["type"], "run_finished");
}

#[test]
fn in_a_chat_session_the_next_message_answers_the_teams_question() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", ASKING);
    let s = Server::start(dir.path(), &["asking.yaml"], &[]);
    let c = client();
    let say = |text: &str| {
        json_of(
            c.post(s.url("/v1/chat/completions"))
                .json(&json!({"user": "dave", "messages": [{"role": "user", "content": text}]}))
                .send()
                .unwrap(),
        )["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(say("I was charged twice"), "clerk asks: Which order?");
    assert_eq!(say("order A-1001"), "Refunded the order you named.");
    let dave = json_of(c.get(s.url("/sessions/dave")).send().unwrap());
    let text = dave.to_string();
    assert!(
        text.contains("order A-1001") && text.contains("Refunded"),
        "{dave}"
    );
}

#[test]
fn a_run_is_cancelled_over_http() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "slow.yaml", SLOW);
    let s = Server::start(dir.path(), &["slow.yaml"], &[]);
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
    let t = Instant::now();
    let r = c.post(s.url(&format!("/runs/{id}/cancel"))).send().unwrap();
    assert_eq!(r.status(), 202);
    let run = settled(&s, &id);
    assert_eq!(run["status"], "cancelled", "{run}");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let twice = c.post(s.url(&format!("/runs/{id}/cancel"))).send().unwrap();
    assert_eq!(twice.status(), 409);
}

#[test]
fn a_session_carries_on_across_runs_and_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    let c = client();
    for (task, answer) in [("first", "final one"), ("second", "final two")] {
        let id = json_of(
            c.post(s.url("/runs"))
                .json(&json!({"task": task, "session": "alice"}))
                .send()
                .unwrap(),
        )["id"]
            .as_str()
            .unwrap()
            .to_string();
        let run = settled(&s, &id);
        assert_eq!(run["response"], answer, "{run}");
        assert_eq!(run["session"], "alice");
    }
    let alice = json_of(c.get(s.url("/sessions/alice")).send().unwrap());
    let messages = alice["messages"].as_array().unwrap();
    let users: Vec<&Value> = messages.iter().filter(|m| m["sender"] == "user").collect();
    assert_eq!(users.len(), 2, "{alice}");
    assert_eq!(users[1]["content"], "second");
    assert_eq!(messages.last().unwrap()["content"], "final two");
    assert!(
        messages.last().unwrap()["time"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let list = json_of(c.get(s.url("/sessions")).send().unwrap());
    assert_eq!(list[0]["id"], "alice");
    assert_eq!(list[0]["messages"], messages.len());
    assert_eq!(c.get(s.url("/sessions/bob")).send().unwrap().status(), 404);
    let bad = c
        .post(s.url("/runs"))
        .json(&json!({"task": "x", "session": "../etc"}))
        .send()
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[test]
fn the_openai_endpoint_answers_whole_and_streamed_with_usage() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    let c = client();
    let models = json_of(c.get(s.url("/v1/models")).send().unwrap());
    assert_eq!(models["data"][0]["id"], "desk");

    let whole = c
        .post(s.url("/v1/chat/completions"))
        .json(&json!({"model": "desk", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        ]}))
        .send()
        .unwrap();
    assert_eq!(whole.status(), 200);
    let run_id = whole.headers()["x-troupe-run"]
        .to_str()
        .unwrap()
        .to_string();
    let whole = json_of(whole);
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["choices"][0]["message"]["content"], "final one");
    assert_eq!(whole["choices"][0]["message"]["role"], "assistant");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    // The team's own tool call stays inside.
    assert!(whole["choices"][0]["message"].get("tool_calls").is_none());
    let u = &whole["usage"];
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
    );
    assert!(u["completion_tokens"].as_u64().unwrap() > 0);
    assert_eq!(settled(&s, &run_id)["status"], "completed");

    let streamed = c
        .post(s.url("/v1/chat/completions"))
        .json(
            &json!({"model": "desk", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "again"}]}),
        )
        .send()
        .unwrap();
    assert_eq!(streamed.status(), 200);
    let chunks = frames(streamed);
    assert_eq!(chunks.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|f| serde_json::from_str(&f.data).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    // Stateless: the scripted editor sees a fresh conversation again.
    assert_eq!(content, "final one");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop")
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert!(
        last["usage"]["total_tokens"].as_u64().unwrap() > 0,
        "{last}"
    );

    // Stored session by header: the second request carries on the first
    // (the scripted editor, seeing its earlier reply, gives its second).
    for (said, answer) in [("one", "final one"), ("two", "final two")] {
        let r = json_of(
            c.post(s.url("/v1/chat/completions"))
                .header("X-Troupe-Session", "carol")
                .json(
                    &json!({"model": "anything", "messages": [{"role": "user", "content": said}]}),
                )
                .send()
                .unwrap(),
        );
        assert_eq!(r["choices"][0]["message"]["content"], answer, "{r}");
    }
    let carol = json_of(c.get(s.url("/sessions/carol")).send().unwrap());
    let users: Vec<&str> = carol["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["sender"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["one", "two"]);
}

#[test]
fn the_team_is_described_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml"],
        &[("NEVER_SHOWN_KEY", "sk-very-secret-value")],
    );
    let body = client().get(s.url("/team")).send().unwrap().text().unwrap();
    assert!(!body.contains("sk-very-secret-value"), "{body}");
    assert!(!body.contains("NEVER_SHOWN_KEY"), "{body}");
    assert!(!body.contains("shh-header-value"), "{body}");
    let team: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(team["name"], "desk");
    assert_eq!(team["description"], "A writer and an editor.");
    assert_eq!(team["agents"][1]["name"], "writer");
    assert_eq!(team["agents"][1]["tools"], json!(["calculator"]));
    assert_eq!(team["agents"][1]["model"]["provider"], "auto");
    assert_eq!(team["agents"][1]["model"]["model"], "gpt-test");
    assert!(
        team["mermaid"].as_str().unwrap().starts_with("flowchart"),
        "{team}"
    );
    assert!(team["mermaid"].as_str().unwrap().contains("writer"));
    assert_eq!(team["models"][0]["name"], "m");
}

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
    // A token in the query opens no API route.
    assert_eq!(
        c.get(s.url("/team?token=t0ken")).send().unwrap().status(),
        401
    );
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
