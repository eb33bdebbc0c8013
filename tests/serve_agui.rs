//! `POST /agui/{team}`: the AG-UI 1.0 endpoint of `troupe serve`, driven
//! over HTTP as a front end drives it. Every stream of the example teams —
//! a nested team (`examples/configs/nested.yaml`), tool calls
//! (`agent_as_tool.yaml`), questions answered through `resume`
//! (`human_in_the_loop.yaml`) — and of a team whose model streams from a
//! server on 127.0.0.1 is checked by `ag-ui-validate` (PyPI, the AG-UI
//! conformance validator: 0 errors, 0 warnings) and each of its events by
//! the official AG-UI Python SDK's event models (`ag-ui-protocol`,
//! tests/py/agui_events.py). Both live in the venv `.ci/python-venv.sh`
//! makes (`target/py-venv`, or `TROUPE_PY_VENV`); without it these tests
//! fail, saying how to make it, unless `TROUPE_ALLOW_SKIP=1` (never in CI).
//! AG-UI's official TypeScript client (`@ag-ui/client`, which checks every
//! event against `@ag-ui/core`'s schemas) answers the interrupts through
//! `resume` (tests/js/agui_client.mjs; `.ci/node-agui.sh` installs it under
//! target/node-agui). Bad input needs neither: a JSON 4xx, 401 without the
//! token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;

use common::serve::{Server, client};
use common::text;
use serde_json::{Value, json};

const TOKEN: &str = "agui-token";

/// The venv with `ag-ui-validate` and `ag-ui-protocol`, if made.
fn venv() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    venv.join("bin/ag-ui-validate").exists().then_some(venv)
}

/// Checks a recorded stream with `ag-ui-validate` (0 errors, 0
/// warnings; the shared-state feature declared, but for a refusal, which
/// starts no run) and each event with the SDK's models.
fn validate(venv: &Path, dir: &Path, name: &str, sse: &str) {
    let features = if sse.contains("RUN_ERROR") {
        "agentic-chat"
    } else {
        "shared-state"
    };
    let file = dir.join(format!("{name}.sse"));
    std::fs::write(&file, sse).unwrap();
    let out = Command::new(venv.join("bin/ag-ui-validate"))
        .arg(&file)
        .args(["--json", "--max-warnings", "0"])
        .args(["--features", features])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ag-ui-validate said no JSON ({e}): {}{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    assert_eq!(
        (
            &report["summary"]["errors"],
            &report["summary"]["warnings"],
            out.status.code()
        ),
        (&json!(0), &json!(0), Some(0)),
        "ag-ui-validate on {name}: {:#}\n{sse}",
        report["diagnostics"]
    );
    assert!(report["eventCount"].as_u64().unwrap() >= 2, "{report}");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/agui_events.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ag-ui-protocol's models refuse events of {name}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Has `ag-ui-validate` post its own `RunAgentInput` to `url` and check the
/// live stream, the transport too (Content-Type, incremental flushing,
/// keep-alive, a terminal event): 0 errors, 0 warnings, no rule skipped.
fn validate_live(venv: &Path, url: &str) {
    let out = Command::new(venv.join("bin/ag-ui-validate"))
        .arg(url)
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args([
            "--json",
            "--max-warnings",
            "0",
            "--features",
            "shared-state",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ag-ui-validate said no JSON ({e}): {}{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    assert_eq!(
        (
            &report["summary"]["errors"],
            &report["summary"]["warnings"],
            &report["skipped"],
            out.status.code()
        ),
        (&json!(0), &json!(0), &json!([]), Some(0)),
        "ag-ui-validate {url}: {report:#}"
    );
}

/// A `RunAgentInput` on `thread` with one user message.
fn input(thread: &str, run: &str, message: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {"ui": "kept"},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": message}],
        "tools": [], "context": [], "forwardedProps": {},
    })
}

/// A `RunAgentInput` answering `interrupt` with `answer`.
fn resume(thread: &str, run: &str, parent: &str, interrupt: &str, answer: Value) -> Value {
    json!({
        "threadId": thread, "runId": run, "parentRunId": parent,
        "messages": [], "tools": [], "context": [], "forwardedProps": {},
        "resume": [{"interruptId": interrupt, "status": "resolved", "payload": answer}],
    })
}

/// Posts `body` to `/agui/{team}`; the SSE body.
fn post(s: &Server, team: &str, body: &Value) -> String {
    let r = client()
        .post(s.url(&format!("/agui/{team}")))
        .bearer_auth(TOKEN)
        .json(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    r.text().unwrap()
}

/// The events of an SSE body.
fn events(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn position(events: &[Value], kind: &str, step: &str) -> usize {
    events
        .iter()
        .position(|e| e["type"] == kind && e["stepName"] == step)
        .unwrap_or_else(|| panic!("no {kind} {step}"))
}

/// The text of all `TEXT_MESSAGE_CONTENT`s.
fn said(events: &[Value]) -> String {
    of_type(events, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// A server over copies of the examples `names`.
fn serve_examples(names: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/configs");
    for n in names {
        std::fs::copy(examples.join(n), dir.path().join(n)).unwrap();
    }
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", TOKEN)]);
    (dir, s)
}

#[test]
fn a_nested_team_streams_its_steps_by_path_and_passes_the_validator() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let (dir, s) = serve_examples(&["nested.yaml", "nested_legal.yaml"]);
    let mut body = input("press-1", "r1", "announce the 2.0 release");
    body["parentRunId"] = json!("r0");
    let sse = post(&s, "press", &body);
    validate(&venv, dir.path(), "nested", &sse);
    let ev = events(&sse);
    assert_eq!(ev[0]["type"], "RUN_STARTED");
    assert_eq!(
        (&ev[0]["threadId"], &ev[0]["runId"], &ev[0]["parentRunId"]),
        (&json!("press-1"), &json!("r1"), &json!("r0"))
    );
    assert_eq!(ev[1]["type"], "STATE_SNAPSHOT");
    assert_eq!(ev[1]["snapshot"]["ui"], "kept");
    assert_eq!(ev[1]["snapshot"]["troupe"]["status"], "running");
    let last = ev.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"], json!({"type": "success"}));
    // The inner team's step holds its agents' steps.
    let team = position(&ev, "STEP_STARTED", "press/drafting");
    let writer = position(&ev, "STEP_STARTED", "press/drafting/writer");
    let writer_end = position(&ev, "STEP_FINISHED", "press/drafting/writer");
    let team_end = position(&ev, "STEP_FINISHED", "press/drafting");
    assert!(team < writer && writer < writer_end && writer_end < team_end);
    position(&ev, "STEP_STARTED", "press/legal/lawyer");
    position(&ev, "STEP_STARTED", "press/publisher");
    // The state follows the agents, by JSON Patch.
    let deltas = of_type(&ev, "STATE_DELTA");
    assert!(deltas.iter().any(|d| d["delta"][0]
        == json!({"op": "add", "path": "/troupe/agents/press~1drafting~1writer",
                  "value": {"status": "working", "turns": 1}})));
    assert!(deltas.iter().any(|d| d["delta"][0]
        == json!({"op": "replace", "path": "/troupe/status", "value": "completed"})));
    assert_eq!(
        said(&ev),
        "Published: troupe 2.0 is out: declarative teams in YAML."
    );
    validate_live(&venv, &s.url("/agui/press"));
}

#[test]
fn tool_calls_stream_start_args_end_and_result() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let (dir, s) = serve_examples(&["agent_as_tool.yaml"]);
    let sse = post(
        &s,
        "lead_with_tools",
        &input("tools-1", "r1", "should we adopt Rust?"),
    );
    validate(&venv, dir.path(), "tools", &sse);
    let ev = events(&sse);
    let starts = of_type(&ev, "TOOL_CALL_START");
    let names: Vec<&str> = starts
        .iter()
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["researcher", "review_claim"]);
    let id = &starts[0]["toolCallId"];
    let args = of_type(&ev, "TOOL_CALL_ARGS");
    assert_eq!(&args[0]["toolCallId"], id);
    let args: Value = serde_json::from_str(args[0]["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args["request"], "Facts on Rust adoption in industry");
    let result = of_type(&ev, "TOOL_CALL_RESULT");
    assert_eq!(&result[0]["toolCallId"], id);
    assert!(
        result[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("Android and Windows ship Rust")
    );
    // The workflow called as a tool is a step under the caller's path.
    position(&ev, "STEP_STARTED", "lead_with_tools/lead/review/checker");
    // The answering agent's words: one message, named by its path.
    let started = of_type(&ev, "TEXT_MESSAGE_START");
    assert_eq!(started.len(), 1, "{sse}");
    assert_eq!(started[0]["name"], "lead_with_tools/lead");
    assert_eq!(
        said(&ev),
        "Yes: Rust removes most memory-safety bugs (checked), and large companies already ship it."
    );
    let calls = of_type(&ev, "STATE_DELTA")
        .into_iter()
        .filter(|d| d["delta"][0]["path"] == "/troupe/toolCalls")
        .count();
    assert_eq!(calls, 2);
    validate_live(&venv, &s.url("/agui/lead_with_tools"));
}

/// The interrupts a stream ended with.
fn interrupts(ev: &[Value]) -> Vec<Value> {
    let last = ev.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
    last["outcome"]["interrupts"].as_array().unwrap().clone()
}

#[test]
fn questions_end_the_run_with_an_interrupt_and_resume_answers_them() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let (dir, s) = serve_examples(&["human_in_the_loop.yaml"]);
    let team = "refund-desk";
    // The clerk asks which order.
    let sse = post(&s, team, &input("desk-1", "r1", "I was charged twice"));
    validate(&venv, dir.path(), "ask", &sse);
    let ev = events(&sse);
    let asked = interrupts(&ev);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["reason"], "input_required");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("Which order was charged twice")
    );
    // The state the client needs to resume comes first.
    let snapshot = &ev[ev.len() - 2];
    assert_eq!(snapshot["type"], "STATE_SNAPSHOT");
    assert_eq!(
        snapshot["snapshot"]["troupe"]["status"],
        "waiting_for_input"
    );
    assert_eq!(
        snapshot["snapshot"]["troupe"]["requests"][0]["id"],
        asked[0]["id"]
    );

    // Breaking the interrupt contract: a RUN_ERROR stream, the run waits on.
    let sse = post(&s, team, &input("desk-1", "x1", "hello?"));
    validate(&venv, dir.path(), "pending", &sse);
    let ev = events(&sse);
    assert_eq!(ev.len(), 2);
    assert_eq!(
        (&ev[1]["type"], &ev[1]["code"]),
        (&json!("RUN_ERROR"), &json!("INTERRUPT_PENDING"))
    );
    let sse = post(
        &s,
        team,
        &resume("desk-1", "x2", "r1", "no-such", json!("a")),
    );
    validate(&venv, dir.path(), "unknown", &sse);
    let ev = events(&sse);
    assert_eq!(ev[1]["code"], "RESUME_INVALID");
    assert!(ev[1]["message"].as_str().unwrap().contains("no-such"));

    // The answer runs the clerk on, to the calculator's approval.
    let id = asked[0]["id"].as_str().unwrap();
    let sse = post(
        &s,
        team,
        &resume("desk-1", "r2", "r1", id, json!("order A-1001, 49.99 twice")),
    );
    validate(&venv, dir.path(), "approve", &sse);
    let ev = events(&sse);
    assert_eq!(ev[0]["parentRunId"], "r1");
    let calc = of_type(&ev, "TOOL_CALL_START");
    assert_eq!(calc[0]["toolCallName"], "calculator");
    let asked = interrupts(&ev);
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("approve calculator")
    );

    // Approved (`{answer}` form), the supervisor is asked to sign off.
    let id = asked[0]["id"].as_str().unwrap();
    let sse = post(
        &s,
        team,
        &resume("desk-1", "r3", "r2", id, json!({"answer": "yes"})),
    );
    validate(&venv, dir.path(), "sign", &sse);
    let ev = events(&sse);
    position(&ev, "STEP_STARTED", "refund-desk/supervisor");
    let asked = interrupts(&ev);
    assert_eq!(asked[0]["metadata"]["agent"], "supervisor");

    // Signed off: the run completes with the supervisor's words.
    let id = asked[0]["id"].as_str().unwrap();
    let sse = post(
        &s,
        team,
        &resume("desk-1", "r4", "r3", id, json!("Signed off.")),
    );
    validate(&venv, dir.path(), "done", &sse);
    let ev = events(&sse);
    assert_eq!(ev.last().unwrap()["outcome"], json!({"type": "success"}));
    assert_eq!(said(&ev), "Signed off.");

    // Nothing waits now: a resume has nothing to answer.
    let sse = post(&s, team, &resume("desk-1", "r5", "r4", id, json!("again")));
    assert_eq!(events(&sse)[1]["code"], "RESUME_INVALID");

    // Another thread: its question cancelled, its run ends cancelled.
    let ev = events(&post(&s, team, &input("desk-2", "c1", "charged twice")));
    let id = interrupts(&ev)[0]["id"].as_str().unwrap().to_string();
    let mut body = resume("desk-2", "c2", "c1", &id, Value::Null);
    body["resume"][0] = json!({"interruptId": id, "status": "cancelled"});
    let sse = post(&s, team, &body);
    validate(&venv, dir.path(), "cancelled", &sse);
    let ev = events(&sse);
    let last = ev.last().unwrap();
    assert_eq!(last["result"]["status"], "cancelled", "{last}");
    let run = last["result"]["run"].as_str().unwrap();
    let r = client()
        .get(s.url(&format!("/runs/{run}")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    assert_eq!(r.json::<Value>().unwrap()["status"], "cancelled");
}

/// Two agents in parallel, each asking the user a question.
const TWO_ASK: &str = "version: 1
name: twoask
models:
  m: {provider: scripted}
agents:
  a:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which colour?\"}}
      - \"Colour noted.\"
  b:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which size?\"}}
      - \"Size noted.\"
workflow:
  steps:
    - id: both
      type: parallel
      steps:
        - agent: a
        - agent: b
";

#[test]
fn two_questions_at_once_are_two_interrupts_answered_by_one_resume() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "twoask.yaml", TWO_ASK);
    let s = Server::start(
        dir.path(),
        &["twoask.yaml"],
        &[("TROUPE_SERVE_TOKEN", TOKEN)],
    );
    let sse = post(&s, "twoask", &input("shirt", "r1", "order a shirt"));
    validate(&venv, dir.path(), "two", &sse);
    let asked = interrupts(&events(&sse));
    let ids: Vec<String> = asked
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{asked:?}");
    let colour = asked
        .iter()
        .position(|i| i["metadata"]["question"] == "Which colour?")
        .unwrap();
    // One answer alone breaks the contract: every open interrupt needs one.
    let partial = resume("shirt", "r2", "r1", &ids[colour], json!("red"));
    let ev = events(&post(&s, "twoask", &partial));
    assert_eq!(ev[1]["code"], "RESUME_INVALID");
    assert!(
        ev[1]["message"]
            .as_str()
            .unwrap()
            .contains(&ids[1 - colour])
    );
    // Both: one AG-UI run answers them in turn and completes.
    let mut both = partial.clone();
    both["resume"] = json!([
        {"interruptId": ids[colour], "status": "resolved", "payload": "red"},
        {"interruptId": ids[1 - colour], "status": "resolved", "payload": {"answer": "M"}},
    ]);
    let sse = post(&s, "twoask", &both);
    validate(&venv, dir.path(), "both", &sse);
    let ev = events(&sse);
    assert_eq!(ev.last().unwrap()["outcome"], json!({"type": "success"}));
    let session = client()
        .get(s.url("/sessions/shirt"))
        .bearer_auth(TOKEN)
        .send()
        .unwrap()
        .json::<Value>()
        .unwrap();
    let said: Vec<(&str, &str)> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["sender"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        said.contains(&("user", "red")) && said.contains(&("user", "M")),
        "{said:?}"
    );
    assert!(said.contains(&("a", "Colour noted.")) && said.contains(&("b", "Size noted.")));
}

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
