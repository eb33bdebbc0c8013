//! Cassettes beyond one `troupe run`: `troupe serve --record DIR` records
//! each served run into DIR/<run id>/, replayable by `troupe run --replay`
//! and by `troupe serve --replay` (every run anew); a remote A2A agent's
//! turns (a `troupe serve` on 127.0.0.1) are recorded and replayed with the
//! remote stopped.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::serve::{Server, client};
use common::sse_model::SseModel;
use common::{produced, text, troupe, wait, write};
use serde_json::{Value, json};

use std::path::Path;
use std::time::{Duration, Instant};

const TEAM: &str = "version: 1
name: pair
models:
  m: {provider: openai, model: fake-model, base_url: \"${TEST_BASE_URL}\", api_key_env: TEST_API_KEY, retries: 1}
agents:
  checker: {model: m, instructions: Check the sums., tools: [calculator]}
  writer: {model: m, instructions: Write the reply.}
workflow:
  steps: [{agent: checker}, {agent: writer}]
";

fn troupe_run(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = troupe(dir, args);
    cmd.env("TEST_API_KEY", "sk-test-key-never-recorded");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    wait(cmd.spawn().expect("start troupe"), Duration::from_secs(60))
}

/// Starts a run of `team` on `s` and waits for it to end; its JSON.
fn served_run(s: &Server, team: &str, task: &str) -> Value {
    let c = client();
    let started: Value = c
        .post(s.url("/runs"))
        .json(&json!({"team": team, "task": task}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = started["id"].as_str().expect("a run id").to_string();
    let t0 = Instant::now();
    loop {
        let run: Value = c
            .get(s.url(&format!("/runs/{id}")))
            .send()
            .unwrap()
            .json()
            .unwrap();
        if run["status"] != "running" {
            return run;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the run never ended: {run}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_records_each_run_into_its_own_cassette_and_replays_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "pair.yaml", TEAM);
    let cfg = cfg.to_str().unwrap();
    let mut model = SseModel::start();
    let url = model.url.clone();
    let envs = [
        ("TEST_BASE_URL", url.as_str()),
        ("TEST_API_KEY", "sk-test-key-never-recorded"),
    ];
    let s = Server::start(dir.path(), &[cfg, "--record", "tapes"], &envs);
    let first = served_run(&s, "pair", "Add six sevens.");
    let second = served_run(&s, "pair", "Add two twos.");
    assert_eq!(first["status"], "completed", "{first}");
    drop(s);
    model.stop();

    // Each run's cassette in its own directory, keyed by path.
    for run in [&first, &second] {
        let id = run["id"].as_str().unwrap();
        let calls =
            std::fs::read_to_string(dir.path().join("tapes").join(id).join("model_calls.jsonl"))
                .expect("a cassette per run");
        let agents: Vec<String> = calls
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["agent"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            agents,
            ["pair/checker", "pair/checker", "pair/writer"],
            "{calls}"
        );
    }

    // `troupe run --replay` of one served run, the model gone.
    let id = first["id"].as_str().unwrap();
    let tape = format!("tapes/{id}");
    let out = troupe_run(
        dir.path(),
        &[("TEST_BASE_URL", url.as_str())],
        &[
            "run",
            "--events",
            "jsonl",
            "--replay",
            &tape,
            cfg,
            "Add six sevens.",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let replayed = produced(&out);
    assert_eq!(
        replayed.last().unwrap().1,
        first["response"].as_str().unwrap()
    );

    // `troupe serve --replay`: every run replays the recording anew.
    let s = Server::start(dir.path(), &[cfg, "--replay", &tape], &envs);
    for _ in 0..2 {
        let again = served_run(&s, "pair", "Add six sevens.");
        assert_eq!(again["status"], "completed", "{again}");
        assert_eq!(again["response"], first["response"]);
    }
    // Another task is not in the cassette: the run fails naming the call.
    let other = served_run(&s, "pair", "Something else.");
    assert_eq!(other["status"], "failed", "{other}");
    assert!(other.to_string().contains("pair/checker"), "{other}");
}

const REMOTE: &str = "version: 1
name: helper
models:
  main: {provider: auto, model: any}
agents:
  helper:
    model: main
    instructions: Help.
    script: [\"Remote help, first.\", \"Remote help, second.\"]
workflow:
  steps: [{agent: helper}]
";

fn relay(url: &str) -> String {
    format!(
        "version: 1
name: relay
agents:
  remote:
    a2a: {{url: \"{url}\", headers: {{X-Api-Key: \"${{REMOTE_TOKEN}}\"}}, timeout: 10s}}
workflow:
  steps: [{{agent: remote}}]
"
    )
}

#[test]
fn a_remote_a2a_agent_is_recorded_and_replayed_with_the_remote_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let remote_cfg = write(dir.path(), "helper.yaml", REMOTE);
    let s = Server::start(dir.path(), &[remote_cfg.to_str().unwrap()], &[]);
    let url = s.url("/a2a/helper");
    let cfg = write(dir.path(), "relay.yaml", &relay(&url));
    let cfg = cfg.to_str().unwrap();
    let token = "remote-tok-8d2e41f0a9";
    let envs = [("REMOTE_TOKEN", token)];
    let recorded = troupe_run(
        dir.path(),
        &envs,
        &[
            "run", "--events", "jsonl", "--record", "cas", cfg, "Help me.",
        ],
    );
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    let thread = produced(&recorded);
    assert_eq!(
        thread.last().unwrap().1,
        "Remote help, first.",
        "{thread:?}"
    );
    let a2a =
        std::fs::read_to_string(dir.path().join("cas/a2a_calls.jsonl")).expect("the A2A turns");
    let entry: Value = serde_json::from_str(a2a.trim()).unwrap();
    assert_eq!(
        (&entry["agent"], &entry["call"]),
        (&json!("relay/remote"), &json!(0)),
        "{entry}"
    );
    assert!(!a2a.contains(token), "{a2a}");

    // The remote gone (its port closed), the replay gives the same thread.
    drop(s);
    assert!(
        client().get(&url).send().is_err(),
        "the remote still answers"
    );
    let replayed = troupe_run(
        dir.path(),
        &envs,
        &[
            "run", "--events", "jsonl", "--replay", "cas", cfg, "Help me.",
        ],
    );
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        text(&replayed.stderr)
    );
    assert_eq!(produced(&replayed), thread);

    // Another task: the remote agent's turn is not in the cassette.
    let out = troupe_run(
        dir.path(),
        &envs,
        &["run", "-q", "--replay", "cas", cfg, "Other."],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("agent `relay/remote` remote agent turn 0"),
        "{err}"
    );
}
