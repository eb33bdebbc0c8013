//! `troupe serve` through HTTP, as a client uses it: the runs API (start,
//! live events resumed with Last-Event-ID, status, answering a question,
//! cancelling), stored sessions, the OpenAI endpoint streamed and not, and
//! the team's description (the safety rules: tests/serve_safety.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::serve::{ASKING, DESK, Frame, SLOW, Server, client, frames, json_of, settled};
use common::write;
use serde_json::{Value, json};

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
fn a_directory_serves_each_config_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let teams = dir.path().join("teams");
    std::fs::create_dir(&teams).unwrap();
    write(&teams, "desk.yaml", DESK);
    write(&teams, "asking.yaml", ASKING);
    write(&teams, "notes.txt", "not a config");
    let s = Server::start(dir.path(), &["teams"], &[]);
    let c = client();
    let models = json_of(c.get(s.url("/v1/models")).send().unwrap());
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["asking", "desk"]);
    let ask = |model: &str| {
        c.post(s.url("/v1/chat/completions"))
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .unwrap()
    };
    let desk = json_of(ask("desk"));
    assert_eq!(desk["choices"][0]["message"]["content"], "final one");
    assert_eq!(desk["model"], "desk");
    let asking = json_of(ask("asking"));
    assert_eq!(
        asking["choices"][0]["message"]["content"],
        "clerk asks: Which order?"
    );
    let unknown = ask("gpt-4o");
    assert_eq!(unknown.status(), 404);
    let message = json_of(unknown)["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("asking, desk"), "{message}");
    let team = json_of(c.get(s.url("/team?team=desk")).send().unwrap());
    assert_eq!(team["name"], "desk");
    let run = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "go", "team": "desk"}))
            .send()
            .unwrap(),
    );
    assert_eq!(run["team"], "desk");
    assert_eq!(
        c.get(s.url("/team?team=nope")).send().unwrap().status(),
        404
    );
}
