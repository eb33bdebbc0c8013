//! Several `troupe serve` workers on one PostgreSQL database look like one
//! server: a run executing on worker A is followed through worker B — SSE
//! (every event once, in order, from the start and from `Last-Event-ID`),
//! A2A `SubscribeToTask` over the HTTP+JSON binding — listed by B with its
//! live status and cancelled through B; a session's double-texting
//! `reject` and `interrupt` hold across workers, and an AG-UI message
//! through B waits for the thread's run on A; a background run's webhook is told by
//! the worker that took the run over after its first worker was killed.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{Server, client, frames, json_of, settled};
use common::write;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Three steps; the writer takes a few seconds.
const NOTES: &str = "version: 1
name: notes
models:
  fast: {provider: scripted, replies: [\"outline\"], when_exhausted: repeat_last}
  slow: {provider: scripted, delay: 3s, replies: [\"draft\"], when_exhausted: repeat_last}
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

/// Two workers on a fresh database serving [`NOTES`]; `None` when there is
/// no PostgreSQL to test on (and skips are allowed).
fn two_workers(hint: &str) -> Option<(tempfile::TempDir, String, Server, Server)> {
    let url = common::pg::fresh_db(hint)?;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.yaml", NOTES);
    let env = [("DATABASE_URL", url.as_str())];
    let a = Server::start(dir.path(), &["notes.yaml"], &env);
    let b = Server::start(dir.path(), &["notes.yaml"], &env);
    Some((dir, url, a, b))
}

/// Starts a run of `body` on `s`; its id.
fn start(s: &Server, body: Value) -> String {
    let r = client().post(s.url("/runs")).json(&body).send().unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
    json_of(r)["id"].as_str().unwrap().to_string()
}

/// The run `id` in `GET /runs` of `s`.
fn listed(s: &Server, id: &str) -> Value {
    let all = json_of(client().get(s.url("/runs")).send().unwrap());
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("run `{id}` not listed: {all}"))
}

#[test]
fn sse_through_worker_b_follows_a_run_on_worker_a_to_its_end() {
    let Some((_dir, _url, a, b)) = two_workers("wsse") else {
        return;
    };
    let id = start(&a, json!({"task": "release notes"}));
    // B lists A's run as running as soon as A answered, and shows it.
    assert_eq!(listed(&b, &id)["status"], "running");
    assert_eq!(listed(&b, &id)["task"], "release notes");
    let shown = json_of(client().get(b.url(&format!("/runs/{id}"))).send().unwrap());
    assert_eq!(shown["status"], "running", "{shown}");

    // Through B, from the start, while A runs it.
    let through_b = frames(
        client()
            .get(b.url(&format!("/runs/{id}/events")))
            .send()
            .unwrap(),
    );
    // Through A, once over: the reference.
    let on_a = frames(
        client()
            .get(a.url(&format!("/runs/{id}/events")))
            .send()
            .unwrap(),
    );
    let events = |fs: &[common::serve::Frame]| -> Vec<(String, String)> {
        fs.iter()
            .filter(|f| f.event.is_none())
            .map(|f| (f.id.clone().unwrap(), f.data.clone()))
            .collect()
    };
    let (got, want) = (events(&through_b), events(&on_a));
    assert!(want.len() > 6, "{want:?}");
    assert_eq!(got, want, "B's stream differs from A's");
    let ids: Vec<String> = (0..want.len()).map(|n| n.to_string()).collect();
    assert_eq!(
        got.iter().map(|e| e.0.clone()).collect::<Vec<_>>(),
        ids,
        "every event once, in order"
    );
    let end = through_b.last().unwrap();
    assert_eq!(end.event.as_deref(), Some("end"), "{through_b:?}");
    let end: Value = serde_json::from_str(&end.data).unwrap();
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(end["response"], "final: outline and draft", "{end}");

    // From Last-Event-ID, through B again: the rest only.
    let rest = frames(
        client()
            .get(b.url(&format!("/runs/{id}/events")))
            .header("Last-Event-ID", "2")
            .send()
            .unwrap(),
    );
    assert_eq!(events(&rest), want[3..].to_vec());
    // B lists it over.
    assert_eq!(listed(&b, &id)["status"], "completed");
    assert_eq!(settled(&b, &id)["response"], "final: outline and draft");
}

#[test]
fn a2a_subscribe_through_worker_b_follows_a_task_on_worker_a() {
    let Some((_dir, _url, a, b)) = two_workers("wa2a") else {
        return;
    };
    let id = start(&a, json!({"task": "release notes"}));
    let deadline = Instant::now() + Duration::from_secs(10);
    let r = loop {
        let r = client()
            .post(b.url(&format!("/a2a/notes/v1/tasks/{id}:subscribe")))
            .send()
            .unwrap();
        if r.status() == 200 {
            break r;
        }
        assert!(Instant::now() < deadline, "{}", r.text().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    };
    let items: Vec<Value> = frames(r)
        .iter()
        .map(|f| serde_json::from_str(&f.data).unwrap())
        .collect();
    let first = &items[0]["task"];
    assert_eq!(first["id"], id.as_str(), "{items:?}");
    assert_eq!(first["status"]["state"], "TASK_STATE_WORKING", "{items:?}");
    let last = &items.last().unwrap()["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{items:?}");
    let text: String = items
        .iter()
        .filter_map(|i| i["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert!(text.contains("final: outline and draft"), "{items:?}");
    // A's own view agrees.
    assert_eq!(settled(&a, &id)["status"], "completed");
}

#[test]
fn a_run_on_worker_a_is_cancelled_through_worker_b() {
    let Some((_dir, _url, a, b)) = two_workers("wcancel") else {
        return;
    };
    let id = start(&a, json!({"task": "release notes"}));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = client()
            .post(b.url(&format!("/runs/{id}/cancel")))
            .send()
            .unwrap();
        if r.status() == 202 {
            break;
        }
        assert!(Instant::now() < deadline, "{}", r.text().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    let on_a = settled(&a, &id);
    assert_eq!(on_a["status"], "cancelled", "{on_a}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while listed(&b, &id)["status"] != "cancelled" {
        assert!(Instant::now() < deadline, "B never saw it cancelled");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn double_texting_reject_holds_across_workers() {
    let Some((_dir, _url, a, b)) = two_workers("wtext") else {
        return;
    };
    let first = start(&a, json!({"task": "one", "session": "s1"}));
    let r = client()
        .post(b.url("/runs"))
        .json(&json!({"task": "two", "session": "s1", "double_texting": "reject"}))
        .send()
        .unwrap();
    let code = r.status().as_u16();
    let body = r.text().unwrap();
    assert_eq!(code, 409, "{body}");
    assert!(body.contains(&first), "{body}");
    // The run under way went on; once over, B takes the session's next turn.
    assert_eq!(settled(&a, &first)["status"], "completed");
    let deadline = Instant::now() + Duration::from_secs(10);
    while listed(&b, &first)["status"] != "completed" {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let next = start(
        &b,
        json!({"task": "two", "session": "s1", "double_texting": "reject"}),
    );
    let next = settled(&b, &next);
    assert_eq!(next["status"], "completed", "{next}");
}

#[test]
fn double_texting_interrupt_through_worker_b_stops_the_run_on_worker_a() {
    let Some((_dir, _url, a, b)) = two_workers("wint") else {
        return;
    };
    let first = start(&a, json!({"task": "one", "session": "s2"}));
    let second = start(
        &b,
        json!({"task": "two", "session": "s2", "double_texting": "interrupt"}),
    );
    let on_a = settled(&a, &first);
    assert_eq!(on_a["status"], "interrupted", "{on_a}");
    let on_b = settled(&b, &second);
    assert_eq!(on_b["status"], "completed", "{on_b}");
}

/// A webhook on 127.0.0.1 answering 200; the bodies it received.
fn webhook() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/done", listener.local_addr().unwrap());
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let mut length = 0;
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
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, received)
}

#[test]
fn a_webhook_is_told_by_the_worker_that_took_the_run_over() {
    let Some((_dir, url, mut a, b)) = two_workers("whook") else {
        return;
    };
    let (hook, received) = webhook();
    let id = start(
        &a,
        json!({"task": "release notes", "background": true, "webhook": {"url": hook}}),
    );
    // The planner's checkpoint is saved, the writer under way: kill -9.
    let deadline = Instant::now() + Duration::from_secs(20);
    let saved = format!("SELECT count(*) FROM troupe_checkpoints WHERE run_id = '{id}'");
    while common::pg::count(&url, &saved) == 0 {
        assert!(Instant::now() < deadline, "no checkpoint of `{id}`");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();

    let deadline = Instant::now() + Duration::from_secs(40);
    let told = loop {
        if let Some(v) = received.lock().unwrap().first().cloned() {
            break v;
        }
        if Instant::now() > deadline {
            let said: Vec<String> = b.stderr.try_iter().collect();
            panic!("the webhook was never told; B said:\n{}", said.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(told["id"], id.as_str(), "{told}");
    assert_eq!(told["status"], "completed", "{told}");
    assert_eq!(told["response"], "final: outline and draft", "{told}");
    assert_eq!(told["task"], "release notes", "{told}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(received.lock().unwrap().len(), 1, "told once");
}

/// `POST /agui/notes` on the server at `base` with a new user message in `thread`; the
/// stream's events, to its end.
fn agui(base: &str, thread: &str, run: &str, message: &str) -> Vec<Value> {
    let body = json!({
        "threadId": thread, "runId": run, "state": {},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": message}],
        "tools": [], "context": [], "forwardedProps": {},
    });
    let r = client()
        .post(format!("{base}/agui/notes"))
        .json(&body)
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
fn an_agui_message_through_worker_b_waits_for_the_threads_run_on_worker_a() {
    let Some((_dir, _url, a, b)) = two_workers("wagui") else {
        return;
    };
    let a_base = a.base.clone();
    let first = std::thread::spawn(move || agui(&a_base, "t1", "r1", "first"));
    // A's run of the thread is under way, as B sees it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all = json_of(client().get(b.url("/runs")).send().unwrap());
        let going = all
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["session"] == "t1" && r["status"] == "running" && r["task"] == "first");
        if going {
            break;
        }
        assert!(Instant::now() < deadline, "B never saw A's run: {all}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = agui(&b.base, "t1", "r2", "second");
    assert_eq!(second[0]["type"], "RUN_STARTED", "{second:?}");
    let last = second.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{second:?}");
    assert_eq!(last["outcome"], json!({"type": "success"}), "{last}");
    let first = first.join().unwrap();
    assert_eq!(first.last().unwrap()["type"], "RUN_FINISHED", "{first:?}");
    // The second turn began once the first was over: the session holds the
    // first message, its whole answer, then the second.
    let session = json_of(client().get(b.url("/sessions/t1")).send().unwrap());
    let said: Vec<(String, String)> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["sender"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let at = |who: &str, what: &str| {
        said.iter()
            .position(|(s, c)| s == who && c == what)
            .unwrap_or_else(|| panic!("no {who}: {what} in {said:?}"))
    };
    let answer = at("editor", "final: outline and draft");
    assert!(at("user", "first") < answer, "{said:?}");
    assert!(answer < at("user", "second"), "{said:?}");
}
