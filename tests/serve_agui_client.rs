//! `POST /agui/{team}` with AG-UI's official TypeScript client
//! (`@ag-ui/client`, which checks every event against `@ag-ui/core`'s
//! schemas) answering interrupts through `resume` (tests/js/agui_client.mjs;
//! `.ci/node-agui.sh` installs it under target/node-agui), with a model
//! streaming token by token from a server on 127.0.0.1 (its streams checked
//! by `ag-ui-validate`, see tests/agui_common), and bad input: a JSON 4xx
//! naming the problem, 401 without the token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agui_common;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;

use agui_common::*;
use common::serve::{Server, client};
use common::text;
use serde_json::{Value, json};

/// Where `.ci/node-agui.sh` put `@ag-ui/client`, if it did.
fn agui_client() -> Option<PathBuf> {
    let dir = std::env::var_os("TROUPE_AGUI_NODE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/node-agui"),
        PathBuf::from,
    );
    dir.join("node_modules/@ag-ui/client/package.json")
        .exists()
        .then_some(dir)
}

#[test]
fn the_official_typescript_client_answers_every_interrupt_through_resume() {
    let Some(node_dir) = agui_client() else {
        return common::prereq::missing(
            "@ag-ui/client under target/node-agui (or $TROUPE_AGUI_NODE_DIR)",
            "`.ci/node-agui.sh` (Node 20+ and npm)",
        );
    };
    let (_dir, s) = serve_examples(&["human_in_the_loop.yaml"]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js/agui_client.mjs");
    let out = Command::new("node")
        .arg(script)
        .args([
            &s.url("/agui/refund-desk"),
            TOKEN,
            "js-thread",
            "I was charged twice",
            "order A-1001, 49.99 twice",
            "yes",
            "Signed off.",
        ])
        .env("AGUI_NODE_DIR", node_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the @ag-ui/client run failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(report["rounds"], 3, "{report:#}");
    let asked: Vec<&str> = report["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(asked[0].starts_with("clerk asks: Which order"), "{asked:?}");
    assert!(asked[1].contains("approve calculator"), "{asked:?}");
    assert!(asked[2].starts_with("supervisor asks:"), "{asked:?}");
    assert_eq!(report["result"]["status"], "completed");
    for kind in [
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "STEP_STARTED",
        "TOOL_CALL_START",
        "TEXT_MESSAGE_CONTENT",
    ] {
        assert!(
            report["types"].as_array().unwrap().contains(&json!(kind)),
            "{kind}: {report:#}"
        );
    }
    // The client's messages end with the team's answer; its state is the
    // run's, as the deltas built it.
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "Signed off.");
    assert_eq!(report["state"]["troupe"]["status"], "completed");
    assert_eq!(
        report["state"]["troupe"]["agents"]["refund-desk/supervisor"]["status"],
        "done"
    );
}

/// The answer's pieces, as the model server streams them.
const PIECES: [&str; 3] = ["Actors keep ", "their own inboxes, ", "and share nothing."];

/// A model server on 127.0.0.1 streaming [`PIECES`] to every request
/// (OpenAI's SSE chunks); its base URL, and the request bodies it got.
fn model() -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            );
            let chunk = |delta: Value, finish: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                )
            };
            let _ = stream.write_all(chunk(json!({"role": "assistant"}), Value::Null).as_bytes());
            for p in PIECES {
                let _ = stream.write_all(chunk(json!({"content": p}), Value::Null).as_bytes());
                let _ = stream.flush();
            }
            let _ = stream.write_all(chunk(json!({}), json!("stop")).as_bytes());
            let _ = write!(stream, "data: [DONE]\n\n");
        }
    });
    (url, rx)
}

#[test]
fn the_answer_streams_token_by_token_and_a_thread_goes_on_as_a_session() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let (url, bodies) = model();
    let dir = tempfile::tempdir().unwrap();
    common::write(
        dir.path(),
        "solo.yaml",
        &format!(
            "version: 1
name: solo
models:
  live: {{provider: openai, base_url: \"{url}\", model: fake-model, retries: 1, stream: true}}
agents:
  writer: {{model: live, instructions: Answer.}}
workflow:
  sequential:
    participants: [writer]
"
        ),
    );
    let s = Server::start(
        dir.path(),
        &["solo.yaml"],
        &[("TROUPE_SERVE_TOKEN", TOKEN), ("OPENAI_API_KEY", "k")],
    );
    let sse = post(&s, "solo", &input("chat-1", "r1", "what do actors keep?"));
    validate(&venv, dir.path(), "first", &sse);
    let ev = events(&sse);
    let pieces: Vec<&str> = of_type(&ev, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(pieces, PIECES, "one content event per piece the model sent");
    let ids: Vec<&Value> = of_type(&ev, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| &e["messageId"])
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]));
    assert_eq!(of_type(&ev, "TEXT_MESSAGE_END")[0]["messageId"], *ids[0]);
    bodies.recv().unwrap();

    // The same thread: the model sees the first exchange.
    let sse = post(
        &s,
        "solo",
        &input("chat-1", "r2", "and what do they share?"),
    );
    validate(&venv, dir.path(), "second", &sse);
    let sent = bodies.recv().unwrap().to_string();
    assert!(
        sent.contains("what do actors keep?") && sent.contains("and share nothing."),
        "{sent}"
    );
    assert!(sent.contains("and what do they share?"), "{sent}");

    // A thread troupe has not seen starts from the messages the client
    // holds before its last one.
    let mut body = input("chat-2", "r3", "so?");
    body["messages"] = json!([
        {"id": "a", "role": "user", "content": "an earlier question"},
        {"id": "b", "role": "assistant", "content": "an earlier answer"},
        {"id": "c", "role": "user", "content": [{"type": "text", "text": "so?"}]},
    ]);
    let sse = post(&s, "solo", &body);
    validate(&venv, dir.path(), "seeded", &sse);
    let sent = bodies.recv().unwrap().to_string();
    assert!(sent.contains("an earlier question"), "{sent}");
    assert!(!sent.contains("what do actors keep?"), "{sent}");
}

#[test]
fn bad_input_gets_a_json_4xx_naming_the_problem_and_no_token_a_401() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "asking.yaml", common::serve::ASKING);
    let s = Server::start(
        dir.path(),
        &["asking.yaml"],
        &[("TROUPE_SERVE_TOKEN", TOKEN)],
    );
    let url = s.url("/agui/asking");
    let good = input("t1", "r1", "hello");
    let r = client().post(&url).json(&good).send().unwrap();
    assert_eq!(r.status(), 401);
    let r = client()
        .post(&url)
        .bearer_auth("wrong")
        .json(&good)
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    let cases: Vec<(u16, String, &str)> = vec![
        (400, "{not json".into(), "not valid JSON"),
        (400, json!({"runId": "r1"}).to_string(), "threadId"),
        (
            400,
            json!({"threadId": "t1", "runId": 7}).to_string(),
            "runId",
        ),
        (400, input("../etc", "r1", "x").to_string(), "threadId"),
        (
            400,
            json!({"threadId": "t1", "runId": "r1", "messages": []}).to_string(),
            "no user message",
        ),
        (400, {
            let mut b = good.clone();
            b["state"] = json!([1]);
            b.to_string()
        }, "`state`"),
        (
            400,
            json!({"threadId": "t1", "runId": "r1", "resume": [{"interruptId": "q", "status": "resolved"}]})
                .to_string(),
            "payload",
        ),
        (
            400,
            json!({"threadId": "t1", "runId": "r1", "resume": [{"interruptId": "q", "status": "maybe"}]})
                .to_string(),
            "maybe",
        ),
    ];
    for (status, body, says) in cases {
        let r = client()
            .post(&url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
        assert_eq!(r.headers()["content-type"], "application/json");
        let answer: Value = r.json().unwrap();
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let r = client()
        .post(s.url("/agui/nobody"))
        .bearer_auth(TOKEN)
        .json(&good)
        .send()
        .unwrap();
    assert_eq!(r.status(), 404);
    let answer: Value = r.json().unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("asking")
    );
}
