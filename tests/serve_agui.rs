//! `POST /agui/{team}`: the AG-UI 1.0 endpoint of `troupe serve`, driven
//! over HTTP as a front end drives it. Every stream of the example teams —
//! a nested team (`examples/configs/nested.yaml`), tool calls
//! (`agent_as_tool.yaml`), questions answered through `resume`
//! (`human_in_the_loop.yaml`) — and of two questions asked at once is
//! checked by `ag-ui-validate` (PyPI, the AG-UI conformance validator: 0
//! errors, 0 warnings; recorded, and live against the endpoint) and each of
//! its events by the official AG-UI Python SDK's event models
//! (`ag-ui-protocol`). Both live in the venv `.ci/python-venv.sh` makes
//! (`target/py-venv`, or `TROUPE_PY_VENV`); without it these tests fail,
//! saying how to make it, unless `TROUPE_ALLOW_SKIP=1` (never in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agui_common;
mod common;

use agui_common::*;
use common::serve::{Server, client};
use serde_json::{Value, json};

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
    let tokens = &last["usage"][0];
    assert_eq!(
        tokens["totalTokens"].as_u64().unwrap(),
        tokens["inputTokens"].as_u64().unwrap() + tokens["outputTokens"].as_u64().unwrap()
    );
    assert!(tokens["totalTokens"].as_u64().unwrap() > 0, "{last}");
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
    // Bound to the `ask_user` call it comes from.
    let ask = of_type(&ev, "TOOL_CALL_START");
    assert_eq!(ask[0]["toolCallName"], "ask_user");
    assert_eq!(asked[0]["toolCallId"], ask[0]["toolCallId"]);
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
    // An approval: a tool-bound interrupt, answered `{"approved": true}`.
    assert_eq!(asked[0]["reason"], "tool_call");
    assert_eq!(asked[0]["toolCallId"], calc[0]["toolCallId"]);
    assert_eq!(asked[0]["responseSchema"]["required"], json!(["approved"]));

    // Approved, the supervisor is asked to sign off.
    let id = asked[0]["id"].as_str().unwrap();
    let sse = post(
        &s,
        team,
        &resume("desk-1", "r3", "r2", id, json!({"approved": true})),
    );
    validate(&venv, dir.path(), "sign", &sse);
    let ev = events(&sse);
    position(&ev, "STEP_STARTED", "refund-desk/supervisor");
    let asked = interrupts(&ev);
    assert_eq!(asked[0]["metadata"]["agent"], "supervisor");
    assert!(asked[0].get("toolCallId").is_none(), "a user: agent asks");
    // `{"approved": true}` reached the clerk as the answer `yes`.
    let session: Value = client()
        .get(s.url("/sessions/desk-1"))
        .bearer_auth(TOKEN)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let messages = session["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["sender"] == "user" && m["content"] == "yes"),
        "{session:#}"
    );

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

#[test]
fn a_question_left_open_by_a_restart_is_answered_through_resume() {
    let Some(venv) = venv() else {
        return common::prereq::missing_venv("ag-ui-validate and ag-ui-protocol");
    };
    let (dir, s) = serve_examples(&["human_in_the_loop.yaml"]);
    let team = "refund-desk";
    let ev = events(&post(
        &s,
        team,
        &input("desk-r", "r1", "I was charged twice"),
    ));
    let id = interrupts(&ev)[0]["id"].as_str().unwrap().to_string();
    // The server goes (killed); the session, in the config's SQLite
    // store, keeps the question.
    drop(s);
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", TOKEN)]);
    let sse = post(&s, team, &resume("desk-r", "r3", "r1", "nope", json!("x")));
    assert_eq!(events(&sse)[1]["code"], "RESUME_INVALID");
    assert!(
        sse.contains(&id),
        "the refusal names the open question: {sse}"
    );
    let sse = post(
        &s,
        team,
        &resume(
            "desk-r",
            "r2",
            "r1",
            &id,
            json!("order A-1001, 49.99 twice"),
        ),
    );
    validate(&venv, dir.path(), "restarted", &sse);
    let ev = events(&sse);
    assert_eq!(
        of_type(&ev, "TOOL_CALL_START")[0]["toolCallName"],
        "calculator"
    );
    let asked = interrupts(&ev);
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("approve calculator"),
        "{asked:?}"
    );
}
