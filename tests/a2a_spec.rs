//! A2A v1.0 as the specification words it (docs/specification.md §3, §4.3,
//! §5.4, §9), over real HTTP against `troupe serve`: the JSON-RPC envelope
//! and parameters refused with the spec's exact error codes, a
//! non-blocking send seen working, subscribed to from a second connection
//! and completed, `ListTasks` filters and pages, and push notifications
//! delivered to a webhook on 127.0.0.1 with their auth, every state
//! change, again after the webhook answered 500 once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::a2a::{TOKEN, call, error_code, message, post_raw, send, server, until_state};
use common::serve::{client, frames, json_of};
use serde_json::{Value, json};

#[test]
fn bad_envelopes_and_params_get_the_spec_error_codes() {
    let (_dir, s) = server();
    let code_of = |body: &str| error_code(&json_of(post_raw(&s, "asking", body, "1.0")));
    // The envelope (JSON-RPC 2.0 §4, §5.1).
    assert_eq!(code_of("{not json"), -32700);
    assert_eq!(code_of("[1]"), -32600);
    let old = json!({"jsonrpc": "1.0", "id": 1, "method": "SendMessage", "params": {"message": message("hi")}});
    assert_eq!(code_of(&old.to_string()), -32600);
    assert_eq!(code_of(r#"{"jsonrpc":"2.0","id":1,"params":{}}"#), -32600);
    assert_eq!(
        code_of(r#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}"#),
        -32600
    );
    assert_eq!(
        code_of(r#"{"jsonrpc":"2.0","id":[1],"method":"GetTask"}"#),
        -32600
    );
    assert_eq!(
        code_of(r#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}"#),
        -32601
    );
    assert_eq!(
        code_of(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#),
        -32602
    );
    // The refused envelope started nothing.
    let runs = json_of(
        client()
            .get(s.url("/runs"))
            .bearer_auth(TOKEN)
            .send()
            .unwrap(),
    );
    assert_eq!(runs, json!([]), "{runs}");

    // Parameters.
    let no_id = json!({"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    assert_eq!(
        error_code(&call(&s, "asking", "SendMessage", no_id)),
        -32602
    );
    let no_parts = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}});
    assert_eq!(
        error_code(&call(&s, "asking", "SendMessage", no_parts)),
        -32602
    );
    let two = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "url": "http://x"}]}});
    assert_eq!(error_code(&call(&s, "asking", "SendMessage", two)), -32602);
    assert_eq!(
        error_code(&call(&s, "asking", "SendMessage", json!({}))),
        -32602
    );
    let png =
        json!({"message": message("hi"), "configuration": {"acceptedOutputModes": ["image/png"]}});
    assert_eq!(error_code(&call(&s, "asking", "SendMessage", png)), -32005);
    assert_eq!(
        error_code(&call(&s, "asking", "GetTask", json!({}))),
        -32602
    );
    assert_eq!(
        error_code(&call(&s, "asking", "GetTask", json!({"id": "nope"}))),
        -32001
    );
    assert_eq!(
        error_code(&call(&s, "asking", "CancelTask", json!({"id": "nope"}))),
        -32001
    );
    assert_eq!(
        error_code(&call(
            &s,
            "asking",
            "SubscribeToTask",
            json!({"id": "nope"})
        )),
        -32001
    );
    let push = json!({"taskId": "nope", "url": "http://127.0.0.1:9/hook"});
    assert_eq!(
        error_code(&call(
            &s,
            "asking",
            "CreateTaskPushNotificationConfig",
            push
        )),
        -32001
    );
    for bad in [
        json!({"pageSize": 0}),
        json!({"pageSize": 101}),
        json!({"pageToken": "made-up"}),
        json!({"status": "TASK_STATE_SLEEPY"}),
        json!({"historyLength": -1}),
    ] {
        assert_eq!(
            error_code(&call(&s, "asking", "ListTasks", bad.clone())),
            -32602,
            "{bad}"
        );
    }

    // A task waiting for input: a negative history length is refused;
    // the task, once cancelled, cannot be cancelled again nor subscribed to.
    let task = send(&s, "asking", json!({"message": message("refund")}));
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let id = task["id"].as_str().unwrap();
    let negative = json!({"id": id, "historyLength": -1});
    assert_eq!(error_code(&call(&s, "asking", "GetTask", negative)), -32602);
    let none = call(
        &s,
        "asking",
        "GetTask",
        json!({"id": id, "historyLength": 0}),
    );
    assert!(none["result"].get("history").is_none(), "{none}");
    let one = call(
        &s,
        "asking",
        "GetTask",
        json!({"id": id, "historyLength": 1}),
    );
    assert_eq!(
        one["result"]["history"].as_array().unwrap().len(),
        1,
        "{one}"
    );
    let push = json!({"taskId": id, "url": "ftp://127.0.0.1/hook"});
    assert_eq!(
        error_code(&call(
            &s,
            "asking",
            "CreateTaskPushNotificationConfig",
            push
        )),
        -32602
    );
    let missing = json!({"taskId": id, "id": "no-such-config"});
    assert_eq!(
        error_code(&call(
            &s,
            "asking",
            "GetTaskPushNotificationConfig",
            missing
        )),
        -32001
    );
    let cancelled = call(&s, "asking", "CancelTask", json!({"id": id}));
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    assert_eq!(
        error_code(&call(&s, "asking", "CancelTask", json!({"id": id}))),
        -32002
    );
    assert_eq!(
        error_code(&call(&s, "asking", "SubscribeToTask", json!({"id": id}))),
        -32004
    );
    // A message to a task over is refused (spec §3.1.1).
    let mut late = message("too late");
    late["taskId"] = json!(id);
    let refused = call(&s, "asking", "SendMessage", json!({"message": late}));
    assert_eq!(error_code(&refused), -32004, "{refused}");
    // Another team's task is not found on this team's endpoint.
    assert_eq!(
        error_code(&call(&s, "slowish", "GetTask", json!({"id": id}))),
        -32001
    );

    // Versions: 0.3 (its header, its method names) is refused, saying so.
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}).to_string();
    let r = json_of(post_raw(&s, "asking", &body, "0.3"));
    assert_eq!(error_code(&r), -32009);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("A2A 1.0"),
        "{r}"
    );
    assert_eq!(
        error_code(&json_of(post_raw(&s, "asking", &body, "2.0"))),
        -32009
    );
    let legacy = call(
        &s,
        "asking",
        "message/send",
        json!({"message": message("hi")}),
    );
    assert_eq!(error_code(&legacy), -32009);
    assert!(
        legacy["error"]["message"]
            .as_str()
            .unwrap()
            .contains("SendMessage"),
        "{legacy}"
    );
    assert!(call(&s, "asking", "GetTask", json!({"id": id}))["result"].is_object());

    // The extended card, to the authenticated caller.
    let card = call(&s, "asking", "GetExtendedAgentCard", json!({}));
    assert_eq!(card["result"]["name"], "asking", "{card}");
    assert_eq!(
        card["result"]["capabilities"]["pushNotifications"], true,
        "{card}"
    );
    let unauthenticated = client()
        .post(s.url("/a2a/asking"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}))
        .send()
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
}

#[test]
fn a_non_blocking_send_is_seen_working_subscribed_to_and_completed() {
    let (_dir, s) = server();
    let task = send(
        &s,
        "slowish",
        json!({"message": message("go"), "configuration": {"returnImmediately": true}}),
    );
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(
        until_state(&s, "slowish", &id, "TASK_STATE_WORKING")["id"],
        id.as_str()
    );

    // A message to the task while it works is refused, saying when it is taken.
    let mut early = message("more");
    early["taskId"] = json!(id);
    let refused = call(&s, "slowish", "SendMessage", json!({"message": early}));
    assert_eq!(error_code(&refused), -32004, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_INPUT_REQUIRED"),
        "{refused}"
    );

    // A second connection re-attaches to the running task's stream.
    let second = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let body =
        json!({"jsonrpc": "2.0", "id": "sub", "method": "SubscribeToTask", "params": {"id": id}});
    let r = second
        .post(s.url("/a2a/slowish"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .unwrap();
    let events: Vec<Value> = frames(r)
        .iter()
        .map(|f| serde_json::from_str::<Value>(&f.data).unwrap()["result"].clone())
        .collect();
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{events:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    assert_eq!(last["statusUpdate"]["taskId"], id.as_str());
    let done = until_state(&s, "slowish", &id, "TASK_STATE_COMPLETED");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "at last",
        "{done}"
    );

    // The 0.3 spelling of the same wish.
    let task = send(
        &s,
        "slowish",
        json!({"message": message("again"), "configuration": {"blocking": false}}),
    );
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
}

#[test]
fn list_tasks_filters_by_context_and_state_and_pages() {
    let (_dir, s) = server();
    // A session's later tasks go on with its script: some wait for
    // input, some complete.
    let mut waiting_count = 0;
    for (i, ctx) in ["c1", "c1", "c1", "c2"].iter().enumerate() {
        let mut m = message(&format!("refund {i}"));
        m["contextId"] = json!(ctx);
        let t = send(&s, "asking", json!({"message": m}));
        if t["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" {
            waiting_count += 1;
        }
    }
    assert!(waiting_count >= 2, "{waiting_count}");
    let first = call(
        &s,
        "asking",
        "ListTasks",
        json!({"contextId": "c1", "pageSize": 2}),
    )["result"]
        .clone();
    assert_eq!(first["totalSize"], 3, "{first}");
    assert_eq!(first["pageSize"], 2, "{first}");
    assert_eq!(first["tasks"].as_array().unwrap().len(), 2, "{first}");
    let token = first["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty(), "{first}");
    let second = call(
        &s,
        "asking",
        "ListTasks",
        json!({"contextId": "c1", "pageSize": 2, "pageToken": token}),
    )["result"]
        .clone();
    assert_eq!(second["tasks"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(second["nextPageToken"], "", "{second}");
    let mut seen: Vec<&str> = first["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["tasks"].as_array().unwrap())
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        first["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["contextId"] == "c1")
    );

    let waiting = call(
        &s,
        "asking",
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED", "historyLength": 0}),
    )["result"]
        .clone();
    assert_eq!(waiting["totalSize"], waiting_count, "{waiting}");
    let tasks = waiting["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), waiting_count, "{waiting}");
    assert!(
        tasks
            .iter()
            .all(|t| t["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"),
        "{waiting}"
    );
    // Artifacts only when asked for.
    let all = call(&s, "asking", "ListTasks", json!({}))["result"].clone();
    assert_eq!(all["totalSize"], 4, "{all}");
    assert!(
        all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("artifacts").is_none()),
        "{all}"
    );
    let with = call(&s, "asking", "ListTasks", json!({"includeArtifacts": true}))["result"].clone();
    for t in with["tasks"].as_array().unwrap() {
        let completed = t["status"]["state"] == "TASK_STATE_COMPLETED";
        assert_eq!(t.get("artifacts").is_some(), completed, "{t}");
    }
    assert!(waiting["tasks"][0].get("history").is_none(), "{waiting}");
    let since = json!({"statusTimestampAfter": "2026-01-01T00:00:00Z"});
    assert_eq!(error_code(&call(&s, "asking", "ListTasks", since)), -32004);
    let working = call(
        &s,
        "asking",
        "ListTasks",
        json!({"status": "TASK_STATE_WORKING"}),
    )["result"]
        .clone();
    assert_eq!(working["totalSize"], 0, "{working}");
    assert_eq!(working["tasks"], json!([]), "{working}");
    // Other teams' tasks are not listed here.
    let other = call(&s, "slowish", "ListTasks", json!({}))["result"].clone();
    assert_eq!(other["totalSize"], 0, "{other}");
}

#[test]
fn the_http_json_binding_answers_with_the_specs_statuses() {
    let (_dir, s) = server();
    let rest = |path: &str| s.url(&format!("/a2a/asking/v1{path}"));
    let status_of = |r: reqwest::blocking::Response| {
        let code = r.status().as_u16();
        let ct = r.headers()["content-type"].to_str().unwrap().to_string();
        (code, ct, json_of(r))
    };
    // The card names both interfaces.
    let card = json_of(
        client()
            .get(s.url("/a2a/asking/.well-known/agent-card.json"))
            .send()
            .unwrap(),
    );
    assert_eq!(
        card["supportedInterfaces"][1]["protocolBinding"], "HTTP+JSON",
        "{card}"
    );
    assert!(
        card["supportedInterfaces"][1]["url"]
            .as_str()
            .unwrap()
            .ends_with("/a2a/asking/v1")
    );

    let sent = client()
        .post(rest("/message:send"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&json!({"message": message("refund")}))
        .send()
        .unwrap();
    let (code, ct, body) = status_of(sent);
    assert_eq!((code, ct.as_str()), (200, "application/a2a+json"), "{body}");
    let id = body["task"]["id"].as_str().unwrap().to_string();
    let got = client()
        .get(rest(&format!("/tasks/{id}?historyLength=1")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    let (code, _, task) = status_of(got);
    assert_eq!(code, 200, "{task}");
    assert_eq!(task["history"].as_array().unwrap().len(), 1, "{task}");
    let listed = client()
        .get(rest("/tasks?status=TASK_STATE_INPUT_REQUIRED&pageSize=5"))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    let (_, _, page) = status_of(listed);
    assert_eq!(page["totalSize"], 1, "{page}");

    // Errors: google.rpc.Status, the HTTP status of §5.4, the A2A reason.
    let reason = |b: &Value| {
        b["error"]["details"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let (code, ct, body) = status_of(
        client()
            .get(rest("/tasks/nope"))
            .bearer_auth(TOKEN)
            .send()
            .unwrap(),
    );
    assert_eq!((code, ct.as_str()), (404, "application/a2a+json"));
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body}");
    assert_eq!(reason(&body), "TASK_NOT_FOUND");
    let negative = client()
        .get(rest(&format!("/tasks/{id}?historyLength=-1")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    let (code, _, body) = status_of(negative);
    assert_eq!(
        (code, body["error"]["status"].as_str()),
        (400, Some("INVALID_ARGUMENT")),
        "{body}"
    );
    let no_id = client()
        .post(rest("/message:send"))
        .bearer_auth(TOKEN)
        .json(&json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}))
        .send()
        .unwrap();
    assert_eq!(status_of(no_id).0, 400);
    let cancel = client()
        .post(rest(&format!("/tasks/{id}:cancel")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    assert_eq!(status_of(cancel).0, 200);
    let again = client()
        .post(rest(&format!("/tasks/{id}:cancel")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    let (code, _, body) = status_of(again);
    assert_eq!(
        (code, reason(&body).as_str()),
        (400, "TASK_NOT_CANCELABLE"),
        "{body}"
    );
    let sub = client()
        .post(rest(&format!("/tasks/{id}:subscribe")))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    let (code, _, body) = status_of(sub);
    assert_eq!(
        (code, reason(&body).as_str()),
        (400, "UNSUPPORTED_OPERATION"),
        "{body}"
    );
    let old = client()
        .get(rest(&format!("/tasks/{id}")))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "0.3")
        .send()
        .unwrap();
    let (code, _, body) = status_of(old);
    assert_eq!(
        (code, reason(&body).as_str()),
        (400, "VERSION_NOT_SUPPORTED"),
        "{body}"
    );
    // Behind the token like the rest.
    assert_eq!(client().get(rest("/tasks")).send().unwrap().status(), 401);
}

#[test]
fn file_and_data_parts_go_in_and_a_json_answer_comes_out_as_data() {
    let (_dir, s) = server();
    // "line one\nline two", base64.
    let file = "bGluZSBvbmUKbGluZSB0d28=";
    let params = json!({"message": {"messageId": "m-parts", "role": "ROLE_USER", "parts": [
        {"text": "Check the order."},
        {"data": {"order": 42, "items": ["tea"]}},
        {"raw": file, "filename": "notes.txt", "mediaType": "text/plain"},
        {"url": "https://example.com/invoice.pdf", "filename": "invoice.pdf", "mediaType": "application/pdf"},
    ]}});
    let task = send(&s, "ledger", params);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let parts = &task["artifacts"][0]["parts"];
    assert_eq!(parts[0]["text"], "{\"ok\": true, \"order\": 42}", "{task}");
    assert_eq!(parts[1]["data"], json!({"ok": true, "order": 42}), "{task}");
    assert_eq!(parts[1]["mediaType"], "application/json", "{task}");
    // What the team was given: every part, as text.
    let id = task["id"].as_str().unwrap();
    let run = json_of(
        client()
            .get(s.url(&format!("/runs/{id}")))
            .bearer_auth(TOKEN)
            .send()
            .unwrap(),
    );
    let given = run["task"].as_str().unwrap_or_else(|| panic!("{run}"));
    for needle in [
        "Check the order.",
        "\"order\": 42",
        "[file notes.txt (text/plain)]\nline one\nline two",
        "[file invoice.pdf (application/pdf) at https://example.com/invoice.pdf]",
    ] {
        assert!(given.contains(needle), "{needle:?} not in {given:?}");
    }
    let bad = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "not base64!"}]}});
    assert_eq!(error_code(&call(&s, "ledger", "SendMessage", bad)), -32602);
}
