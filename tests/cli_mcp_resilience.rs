//! MCP servers that go away, through `troupe run`: a cancelled run sends
//! the server `notifications/cancelled` for the call under way (the
//! official Python SDK's server sees its handler cancelled), and a
//! streamable-HTTP server that restarts between two calls is reached again
//! with backoff, the call it never received sent again.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mcp_eras::{
    Model, PyServer, calls, completion, config, free_port, markers_dir, python, results, rounds,
    troupe_run,
};
use common::{jsonl, text, troupe, wait};
use serde_json::json;

#[test]
fn a_cancelled_run_cancels_the_call_on_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = markers_dir(dir.path());
    let session = PyServer::session(&python, &markers);
    let model = Model::start(Box::new(|request| {
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_wait", json!({}))]),
            _ => json!({"role": "assistant", "content": "over"}),
        };
        completion(message, (1, 1))
    }));
    let cfg = config(
        dir.path(),
        &model.url,
        &[format!(
            "{{name: session, url: \"{}\", prefix: s}}",
            session.url()
        )],
    );
    let mut cmd = troupe(
        dir.path(),
        &["run", "--grace", "0", cfg.to_str().expect("utf-8"), "go"],
    );
    cmd.env("TROUPE_TEST_KEY", "k");
    let child = cmd.spawn().expect("start troupe");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !markers.join("waiting").exists() {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!markers.join("cancelled").exists());
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = wait(child, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !markers.join("cancelled").exists() {
        assert!(
            Instant::now() < deadline,
            "the server saw no cancellation; troupe said: {}",
            text(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_http_server_that_restarts_is_reached_again() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = markers_dir(dir.path());
    let port = free_port();
    let marker_arg = markers.to_str().expect("utf-8").to_string();
    let server = Arc::new(Mutex::new(Some(PyServer::start(
        &python,
        "mcp_session_server.py",
        port,
        &[&marker_arg],
    ))));
    let restarts = server.clone();
    let python2 = python.clone();
    let model = Model::start(Box::new(move |request| {
        let round = rounds(request);
        if round == 1 {
            // The server goes away between the agent's two calls, and
            // comes back on the same port a little later.
            let mut slot = restarts.lock().expect("lock");
            if slot.is_some() {
                drop(slot.take());
                let (later, python, marker) =
                    (restarts.clone(), python2.clone(), marker_arg.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(700));
                    let fresh = PyServer::start(&python, "mcp_session_server.py", port, &[&marker]);
                    *later.lock().expect("lock") = Some(fresh);
                });
            }
        }
        let message = match round {
            0 | 1 => calls(round, &[("s_era", json!({}))]),
            _ => json!({"role": "assistant", "content": "over"}),
        };
        completion(message, (1, 1))
    }));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let cfg = config(
        dir.path(),
        &model.url,
        &[format!("{{name: session, url: \"{url}\", prefix: s}}")],
    );
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            cfg.to_str().expect("utf-8"),
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = jsonl(&out);
    let era: Vec<String> = results(&all)
        .into_iter()
        .filter(|(n, _)| n == "s_era")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(
        era,
        [
            "session server speaks 2025-11-25",
            "session server speaks 2025-11-25"
        ],
        "{}",
        text(&out.stderr)
    );
    // The model's handler holds the slot too (and lives on with its
    // server): the server process is killed by taking it out of the slot,
    // not by dropping this handle on it.
    drop(server.lock().expect("lock").take());
}
