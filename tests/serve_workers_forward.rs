//! Requests that must reach the worker holding a run, sent through
//! another worker on the same PostgreSQL database: an answer to a
//! question (`POST /runs/{id}/input`, an A2A follow-up message), also once
//! the run's worker died (the worker asked takes the run over), an AG-UI
//! `resume[]`; A2A `ListTasks` of every worker's tasks, and push configs
//! delivered by the worker holding the task (also after a takeover); a double
//! text's `rollback`; and a session's queue (`enqueue`) spread over two
//! workers, run in the order the messages came in.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{Server, client, json_of, settled};
use common::write;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One question, then an answer naming it.
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
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

/// Two steps; the writer takes two seconds.
const NOTES: &str = "version: 1
name: notes
models:
  slow: {provider: scripted, delay: 2s, replies: [\"draft\"], when_exhausted: repeat_last}
  fast: {provider: scripted, replies: [\"done\"], when_exhausted: repeat_last}
agents:
  writer: {model: slow}
  editor: {model: fast}
workflow:
  steps: [{agent: writer}, {agent: editor}]
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

/// Two workers on a fresh database serving `config`.
fn two_workers(hint: &str, config: &str) -> Option<(tempfile::TempDir, Server, Server)> {
    let url = common::pg::fresh_db(hint)?;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "team.yaml", config);
    let env = [("DATABASE_URL", url.as_str())];
    let a = Server::start(dir.path(), &["team.yaml"], &env);
    let b = Server::start(dir.path(), &["team.yaml"], &env);
    Some((dir, a, b))
}

/// Starts a run of `body` on `s`; its id.
fn start(s: &Server, body: Value) -> String {
    let r = client().post(s.url("/runs")).json(&body).send().unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
    json_of(r)["id"].as_str().unwrap().to_string()
}

/// `POST /runs/{id}/input` on `s`: status and body.
fn input(s: &Server, id: &str, body: Value) -> (u16, Value) {
    let r = client()
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&body)
        .send()
        .unwrap();
    (r.status().as_u16(), json_of(r))
}

/// Waits until `s` sees run `id` with `status`.
fn seen(s: &Server, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = client().get(s.url(&format!("/runs/{id}"))).send().unwrap();
        if r.status() == 200 {
            let v = json_of(r);
            if v["status"] == status {
                return v;
            }
            assert!(Instant::now() < deadline, "never {status}: {v}");
        }
        assert!(Instant::now() < deadline, "never {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A session's messages as (sender, content).
fn session(s: &Server, id: &str) -> Vec<(String, String)> {
    let v = json_of(
        client()
            .get(s.url(&format!("/sessions/{id}")))
            .send()
            .unwrap(),
    );
    v["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no session `{id}`: {v}"))
        .iter()
        .map(|m| {
            (
                m["sender"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_question_on_worker_a_is_answered_through_worker_b() {
    let Some((_dir, a, b)) = two_workers("fwdans", ASKING) else {
        return;
    };
    let id = start(&a, json!({"task": "I was charged twice"}));
    let waiting = settled(&a, &id);
    assert_eq!(waiting["status"], "waiting_for_input", "{waiting}");
    seen(&b, &id, "waiting_for_input");
    // A's path's errors come back through B.
    let (code, body) = input(&b, &id, json!({"request_id": "nobody", "answer": "x"}));
    assert_eq!(code, 404, "{body}");
    assert!(body.to_string().contains("no open request"), "{body}");
    let q = waiting["requests"][0]["id"].clone();
    let (code, body) = input(&b, &id, json!({"request_id": q, "answer": "order A-1001"}));
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["status"], "running", "{body}");
    let done = settled(&a, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["response"], "Refunded the order you named.");
    seen(&b, &id, "completed");
    let (code, body) = input(&b, &id, json!({"answer": "again"}));
    assert_eq!(code, 409, "{body}");

    // An A2A follow-up through B answers a task waiting on A.
    let task = start(&a, json!({"task": "charged twice again"}));
    assert_eq!(settled(&a, &task)["status"], "waiting_for_input");
    seen(&b, &task, "waiting_for_input");
    let mut message = common::a2a::message("order B-7");
    message["taskId"] = json!(task);
    let got = common::a2a::send(&b, "asking", json!({"message": message}));
    assert_eq!(got["id"], task.as_str(), "{got}");
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(settled(&a, &task)["status"], "completed");

    // B lists A's tasks (it runs none itself), newest first, as A does.
    seen(&b, &task, "completed");
    for s in [&a, &b] {
        let listed = common::a2a::call(s, "asking", "ListTasks", json!({}));
        let tasks = listed["result"]["tasks"].as_array().unwrap();
        let ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [task.as_str(), id.as_str()], "{listed}");
        assert_eq!(
            tasks[0]["status"]["state"], "TASK_STATE_COMPLETED",
            "{listed}"
        );
    }
    let waiting = common::a2a::call(
        &b,
        "asking",
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    );
    assert_eq!(waiting["result"]["totalSize"], 0, "{waiting}");
}

#[test]
fn an_answer_through_worker_b_takes_over_a_run_whose_worker_died() {
    let Some((_dir, mut a, b)) = two_workers("fwdorphan", ASKING) else {
        return;
    };
    let id = start(&a, json!({"task": "I was charged twice", "session": "o1"}));
    assert_eq!(settled(&a, &id)["status"], "waiting_for_input");
    seen(&b, &id, "waiting_for_input");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let (code, body) = input(&b, &id, json!({"answer": "order A-1001"}));
    assert_eq!(code, 202, "{body}");
    let done = settled(&b, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["response"], "Refunded the order you named.", "{done}");
    // The session carries the answer and what came of it.
    let said = session(&b, "o1");
    assert!(
        said.iter()
            .any(|(_, c)| c == "Refunded the order you named."),
        "{said:?}"
    );
}

#[test]
fn a_rollback_through_worker_b_puts_the_session_back_before_the_run_on_worker_a() {
    let Some((_dir, a, b)) = two_workers("fwdroll", NOTES) else {
        return;
    };
    let one = start(&a, json!({"task": "one", "session": "r1"}));
    assert_eq!(settled(&a, &one)["status"], "completed");
    let two = start(&a, json!({"task": "two", "session": "r1"}));
    seen(&b, &two, "running");
    let three = start(
        &b,
        json!({"task": "three", "session": "r1", "double_texting": "rollback"}),
    );
    let on_a = settled(&a, &two);
    assert_eq!(on_a["status"], "cancelled", "{on_a}");
    let on_b = settled(&b, &three);
    assert_eq!(on_b["status"], "completed", "{on_b}");
    let said = session(&b, "r1");
    let users: Vec<&str> = said
        .iter()
        .filter(|(s, _)| s == "user")
        .map(|(_, c)| c.as_str())
        .collect();
    assert_eq!(users, ["one", "three"], "{said:?}");
    // The old turns, then only the new message's.
    let want: Vec<(String, String)> = [
        ("user", "one"),
        ("writer", "draft"),
        ("editor", "done"),
        ("user", "three"),
        ("writer", "draft"),
        ("editor", "done"),
    ]
    .iter()
    .map(|(s, c)| (s.to_string(), c.to_string()))
    .collect();
    assert_eq!(said, want);
}

#[test]
fn a_sessions_queue_over_two_workers_runs_in_the_order_messages_came() {
    let Some((_dir, a, b)) = two_workers("fwdqueue", NOTES) else {
        return;
    };
    let q = |text: &str| json!({"task": text, "session": "q1", "double_texting": "enqueue"});
    let one = start(&a, q("one"));
    let two = start(&b, q("two"));
    let three = start(&a, q("three"));
    for (s, id) in [(&a, &one), (&b, &two), (&a, &three)] {
        let r = settled(s, id);
        assert_eq!(r["status"], "completed", "{r}");
    }
    let said = session(&a, "q1");
    let want: Vec<(String, String)> = ["one", "two", "three"]
        .iter()
        .flat_map(|t| [("user", *t), ("writer", "draft"), ("editor", "done")])
        .map(|(s, c)| (s.to_string(), c.to_string()))
        .collect();
    assert_eq!(said, want, "one after the other, in arrival order");
}

/// `POST /agui/asking` on `s` with `body`; the stream's events.
fn agui(s: &Server, body: &Value) -> Vec<Value> {
    let r = client()
        .post(s.url("/agui/asking"))
        .json(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn an_agui_resume_through_worker_b_answers_the_run_waiting_on_worker_a() {
    let Some((_dir, a, b)) = two_workers("fwdagui", ASKING) else {
        return;
    };
    let asked = agui(
        &a,
        &json!({
            "threadId": "t1", "runId": "r1", "state": {},
            "messages": [{"id": "m1", "role": "user", "content": "I was charged twice"}],
            "tools": [], "context": [], "forwardedProps": {},
        }),
    );
    let end = asked.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{asked:?}");
    let interrupt = end["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no interrupt: {end}"))
        .to_string();
    let runs = json_of(client().get(a.url("/runs")).send().unwrap());
    let id = runs[0]["id"].as_str().unwrap().to_string();
    seen(&b, &id, "waiting_for_input");
    let answered = agui(
        &b,
        &json!({
            "threadId": "t1", "runId": "r2", "parentRunId": "r1",
            "messages": [], "tools": [], "context": [], "forwardedProps": {},
            "resume": [{"interruptId": interrupt, "status": "resolved", "payload": "order A-1001"}],
        }),
    );
    let last = answered.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{answered:?}");
    assert_eq!(last["outcome"], json!({"type": "success"}), "{last}");
    let text: String = answered
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(
        text.contains("Refunded the order you named."),
        "{answered:?}"
    );
    // Answered on A, where the run waited.
    let done = settled(&a, &id);
    assert_eq!(done["status"], "completed", "{done}");
}

/// A webhook on 127.0.0.1 answering 200; the bodies it received.
fn webhook() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/push", listener.local_addr().unwrap());
    let received: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut length) = (String::new(), 0);
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let Some((k, v)) = line.trim_end().split_once(':') else {
                    break;
                };
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            // A connection closed without a request (the body empty) is
            // not a notification.
            if let Ok(v) = serde_json::from_slice(&body) {
                log.lock().unwrap().push(v);
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, received)
}

#[test]
fn a_push_config_made_through_worker_b_is_delivered_by_the_worker_holding_the_task() {
    let Some(url) = common::pg::fresh_db("fwdpush") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A quick first step (a checkpoint to take over from), then 5 s.
    let config = NOTES.replace("delay: 2s", "delay: 5s").replace(
        "steps: [{agent: writer}",
        "steps: [{agent: editor, id: first}, {agent: writer}",
    );
    write(dir.path(), "team.yaml", &config);
    let env = [("DATABASE_URL", url.as_str())];
    let mut a = Server::start(dir.path(), &["team.yaml"], &env);
    let b = Server::start(dir.path(), &["team.yaml"], &env);
    let (hook, received) = webhook();
    let id = start(&a, json!({"task": "release notes"}));
    seen(&b, &id, "running");
    let made = common::a2a::call(
        &b,
        "notes",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "p1", "url": hook, "token": "t0k"}),
    );
    assert_eq!(made["result"]["id"], "p1", "{made}");
    // Read back through either worker.
    let listed = common::a2a::call(
        &a,
        "notes",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    );
    assert_eq!(listed["result"]["configs"][0]["id"], "p1", "{listed}");
    // A, running the task, delivers: its state now.
    let states = |r: &std::sync::Mutex<Vec<Value>>| -> Vec<String> {
        r.lock()
            .unwrap()
            .iter()
            .map(|b| {
                assert_eq!(b["statusUpdate"]["taskId"], id.as_str(), "{b}");
                b["statusUpdate"]["status"]["state"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while states(&received).is_empty() {
        assert!(Instant::now() < deadline, "A never delivered");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(states(&received)[0], "TASK_STATE_WORKING");
    // A dies mid-run: B takes the task over and delivers its end.
    let saved = format!("SELECT count(*) FROM troupe_checkpoints WHERE run_id = '{id}'");
    while common::pg::count(&url, &saved) == 0 {
        assert!(Instant::now() < deadline, "no checkpoint of `{id}`");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    assert!(
        !states(&received).contains(&"TASK_STATE_COMPLETED".to_string()),
        "over before A was killed: {:?}",
        states(&received)
    );
    let deadline = Instant::now() + Duration::from_secs(40);
    while !states(&received).contains(&"TASK_STATE_COMPLETED".to_string()) {
        if Instant::now() > deadline {
            let said: Vec<String> = b.stderr.try_iter().collect();
            panic!(
                "the end was never pushed: {:?}; B said:\n{}",
                states(&received),
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
