//! A2A push notifications (A2A v1.0 §4.3.3, §9.4.7) over real HTTP: a
//! webhook on 127.0.0.1 given with a non-blocking `SendMessage` hears
//! every state change of the task (working, input required, working,
//! completed), each with the configured auth and token, the first one
//! again after the webhook answered 500 once (with the same notification
//! id, so a receiver drops the duplicate); the config methods create,
//! get, list and delete beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::a2a::{call, message, send, server, until_state};
use serde_json::{Value, json};

/// What the webhook received: each request's headers (lowercased names)
/// and body.
type Received = Arc<Mutex<Vec<(Vec<(String, String)>, Value)>>>;

/// A webhook on 127.0.0.1 answering 500 to its first request and 200 to
/// the others; its URL and what it received.
fn webhook() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received: Received = Arc::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let Some((k, v)) = line.trim_end().split_once(':') else {
                    break;
                };
                headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
            }
            let length: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap());
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            log.lock()
                .unwrap()
                .push((headers, serde_json::from_slice(&body).unwrap()));
            let status = if n == 0 {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, received)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

#[test]
fn push_notifications_reach_the_webhook_with_auth_every_state_and_after_a_500() {
    let (_dir, s) = server();
    let (url, received) = webhook();
    let config = json!({"url": url, "token": "task-token",
                        "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}});
    let task = send(
        &s,
        "asking-slowly",
        json!({"message": message("refund"),
        "configuration": {"returnImmediately": true, "taskPushNotificationConfig": config}}),
    );
    let id = task["id"].as_str().unwrap().to_string();
    let question = until_state(&s, "asking-slowly", &id, "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        question["status"]["message"]["parts"][0]["text"],
        "Which order?"
    );

    // The config methods see the config the message made; a second one
    // is created, listed, read and deleted.
    let listed = call(
        &s,
        "asking-slowly",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    );
    assert_eq!(
        listed["result"]["configs"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    let extra = json!({"taskId": id, "id": "extra", "url": "http://127.0.0.1:9/never"});
    let made = call(
        &s,
        "asking-slowly",
        "CreateTaskPushNotificationConfig",
        extra,
    );
    assert_eq!(made["result"]["id"], "extra", "{made}");
    let got = call(
        &s,
        "asking-slowly",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "extra"}),
    );
    assert_eq!(got["result"]["url"], "http://127.0.0.1:9/never", "{got}");
    for _ in 0..2 {
        let gone = call(
            &s,
            "asking-slowly",
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "extra"}),
        );
        assert!(gone.get("error").is_none(), "{gone}");
    }
    let listed = call(
        &s,
        "asking-slowly",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    );
    assert_eq!(
        listed["result"]["configs"].as_array().unwrap().len(),
        1,
        "{listed}"
    );

    // The answer runs the task on to its end.
    let mut answer = message("order 42");
    answer["taskId"] = json!(id);
    let done = send(&s, "asking-slowly", json!({"message": answer}));
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let got = loop {
        let got = received.lock().unwrap().clone();
        let last = got
            .last()
            .map(|(_, b)| b["statusUpdate"]["status"]["state"].clone());
        if last == Some(json!("TASK_STATE_COMPLETED")) {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the webhook never heard of the end: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for (headers, body) in &got {
        assert_eq!(
            header(headers, "authorization"),
            "Bearer hook-secret",
            "{headers:?}"
        );
        assert_eq!(header(headers, "x-a2a-notification-token"), "task-token");
        assert_eq!(header(headers, "content-type"), "application/a2a+json");
        assert_eq!(body["statusUpdate"]["taskId"], id.as_str(), "{body}");
    }
    // The first notification came twice (after the 500), with one id.
    let ids: Vec<&str> = got
        .iter()
        .map(|(h, _)| header(h, "x-a2a-notification-id"))
        .collect();
    assert_eq!(ids[0], ids[1], "{ids:?}");
    assert_eq!(got[0].1, got[1].1);
    // Deduplicated by id: every state change, in order.
    let mut states = Vec::new();
    let mut last_id = "";
    for ((_, body), id) in got.iter().zip(&ids) {
        assert!(!id.is_empty());
        if *id != last_id {
            states.push(
                body["statusUpdate"]["status"]["state"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            last_id = id;
        }
    }
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ],
        "{got:?}"
    );
    // The task over and told, its config goes.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = call(
            &s,
            "asking-slowly",
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id}),
        );
        if listed["result"]["configs"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "the config stayed: {listed}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
