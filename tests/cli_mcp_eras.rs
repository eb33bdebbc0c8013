//! MCP servers of both eras, as a user meets them through `troupe run`:
//! one agent uses a 2025-11-25 session server and a 2026-07-28 stateless
//! server at once (both written with the official Python SDK, `mcp`),
//! and what they ask of it works — elicitation becomes a question the run
//! waits on and `--answer` answers (form and URL modes, and the stateless
//! era's `input_required` rounds), sampling is answered by the agent's own
//! model and counted in the run's usage, progress arrives as
//! `tool_progress` events. (Cancellation and reconnection:
//! tests/cli_mcp_resilience.rs.)
//!
//! The agent's model is an OpenAI-compatible endpoint on 127.0.0.1 (the
//! real wire format) that plays a script by the number of assistant
//! messages it is shown, and answers sampling requests apart.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use common::mcp_eras::{
    Model, PyServer, calls, completion, config, events_of, free_port, is_sampling, markers_dir,
    python, question, result_of, rounds, troupe_run,
};
use common::{jsonl, result_line, text};
use serde_json::{Value, json};

#[test]
fn one_agent_uses_a_stateless_and_a_session_server_with_elicitation_sampling_and_progress() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = markers_dir(dir.path());
    let session = PyServer::session(&python, &markers);
    let stateless = PyServer::start(&python, "mcp_stateless_server.py", free_port(), &[]);
    let model = Model::start(Box::new(|request| {
        if is_sampling(request) {
            return completion(
                json!({"role": "assistant", "content": "a short summary"}),
                (100, 50),
            );
        }
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_era", json!({})), ("w_era", json!({}))]),
            1 => calls(round, &[("s_crunch", json!({"steps": 3}))]),
            2 => calls(round, &[("s_summarize", json!({"text": "a long text"}))]),
            3 => calls(round, &[("s_greet", json!({}))]),
            4 => calls(round, &[("s_sign_in", json!({}))]),
            5 => calls(round, &[("w_forecast", json!({}))]),
            _ => json!({"role": "assistant", "content": "all done"}),
        };
        completion(message, (1, 1))
    }));
    let cfg = config(
        dir.path(),
        &model.url,
        &[
            format!(
                "{{name: session, url: \"{}\", prefix: s, sampling: true}}",
                session.url()
            ),
            format!(
                "{{name: stateless, url: \"{}\", prefix: w}}",
                stateless.url()
            ),
        ],
    );
    let cfg = cfg.to_str().expect("utf-8");

    // First run: both eras at once, progress, sampling; then the session
    // server's form elicitation leaves the run waiting.
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "r",
            cfg,
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(result_of(&all, "s_era"), "session server speaks 2025-11-25");
    assert_eq!(
        result_of(&all, "w_era"),
        "stateless server speaks 2026-07-28"
    );
    let progress = events_of(&all, "tool_progress");
    assert_eq!(progress.len(), 3, "{progress:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["name"], "s_crunch", "{p}");
        assert_eq!(p["call_id"], "call_1_0", "{p}");
        assert_eq!(p["progress"].as_f64(), Some((i + 1) as f64), "{p}");
        assert_eq!(p["total"].as_f64(), Some(3.0), "{p}");
        assert_eq!(p["message"], format!("step {} of 3", i + 1), "{p}");
    }
    assert_eq!(result_of(&all, "s_crunch"), "crunched 3");
    assert_eq!(result_of(&all, "s_summarize"), "summary: a short summary");
    // Sampling was the agent's model's: counted as a model call, its
    // tokens in the run's usage.
    let finished = events_of(&all, "run_finished");
    let total = &finished[0]["stats"]["total"];
    assert_eq!(total["model_calls"], 5, "{total}");
    assert_eq!(total["input_tokens"], 104, "{total}");
    assert_eq!(total["output_tokens"], 54, "{total}");
    let sampled: Vec<Value> = model
        .seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|r| is_sampling(r))
        .cloned()
        .collect();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0]["max_tokens"], 50, "{}", sampled[0]);
    let (id, prompt) = question(&out);
    assert!(prompt.contains("Who should I greet?"), "{prompt}");
    assert!(
        prompt.contains("name (string, required)") && prompt.contains("age (integer, required)"),
        "{prompt}"
    );

    // The answer, in a new process: the call runs again and the server's
    // elicitation is answered with it; then the URL elicitation asks.
    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=name=Ada, age=36"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(
        result_of(&all, "s_greet"),
        "hello Ada, 36 [protocol 2025-11-25]"
    );
    let (id, prompt) = question(&out);
    assert!(
        prompt.contains("https://example.test/sign-in") && prompt.contains("Sign in to continue"),
        "{prompt}"
    );

    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=done"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(result_of(&all, "s_sign_in"), "sign-in: accept");
    // The stateless server's `input_required` round becomes a question too.
    let (id, prompt) = question(&out);
    assert!(prompt.contains("Which city?"), "{prompt}");

    let out = troupe_run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "r",
            "--answer",
            &format!("{id}=Paris"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = jsonl(&out);
    assert_eq!(
        result_of(&all, "w_forecast"),
        "sunny in Paris [protocol 2026-07-28, state asked-city]"
    );
    let result = result_line(&out);
    assert_eq!(result["status"], "completed", "{result}");
}

#[test]
fn an_elicitation_is_answered_over_serve() {
    use common::serve::{Server, client, frames, json_of, settled};
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let markers = markers_dir(dir.path());
    let session = PyServer::session(&python, &markers);
    let model = Model::start(Box::new(|request| {
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("s_greet", json!({}))]),
            _ => json!({"role": "assistant", "content": "greeted"}),
        };
        completion(message, (1, 1))
    }));
    config(
        dir.path(),
        &model.url,
        &[format!(
            "{{name: session, url: \"{}\", prefix: s}}",
            session.url()
        )],
    );
    let s = Server::start(dir.path(), &["eras.yaml"], &[("TROUPE_TEST_KEY", "k")]);
    let c = client();
    let started = json_of(
        c.post(s.url("/runs"))
            .json(&json!({"task": "greet"}))
            .send()
            .expect("POST /runs"),
    );
    let id = started["id"].as_str().expect("a run id").to_string();
    let run = settled(&s, &id);
    assert_eq!(run["status"], "waiting_for_input", "{run}");
    let q = &run["requests"][0];
    assert!(
        q["question"]
            .as_str()
            .is_some_and(|t| t.contains("Who should I greet?")),
        "{q}"
    );
    let answered = c
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"request_id": q["id"], "answer": "{\"name\": \"Bo\", \"age\": 7}"}))
        .send()
        .expect("POST input");
    assert_eq!(answered.status(), 202);
    let run = settled(&s, &id);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["response"], "greeted");
    let events: Vec<Value> = frames(
        c.get(s.url(&format!("/runs/{id}/events")))
            .send()
            .expect("events"),
    )
    .iter()
    .filter(|f| f.event.is_none())
    .map(|f| serde_json::from_str(&f.data).expect("an event"))
    .collect();
    assert_eq!(
        result_of(&events, "s_greet"),
        "hello Bo, 7 [protocol 2025-11-25]"
    );
}

#[test]
fn a_call_the_server_makes_a_task_is_polled_to_its_end() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("methods.log");
    let fake = PyServer::start(
        &python,
        "mcp_tasks_fake.py",
        free_port(),
        &[log.to_str().expect("utf-8")],
    );
    let model = Model::start(Box::new(|request| {
        let round = rounds(request);
        let message = match round {
            0 => calls(round, &[("t_long_job", json!({}))]),
            _ => json!({"role": "assistant", "content": "done"}),
        };
        completion(message, (1, 1))
    }));
    let cfg = config(
        dir.path(),
        &model.url,
        &[format!(
            "{{name: tasks, url: \"{}\", prefix: t}}",
            fake.url()
        )],
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
    assert_eq!(result_of(&all, "t_long_job"), "job done after 3 polls");
    let methods = std::fs::read_to_string(&log).expect("the fake's log");
    let methods: Vec<&str> = methods.lines().collect();
    assert_eq!(methods[0], "server/discover", "{methods:?}");
    assert!(!methods.contains(&"initialize"), "{methods:?}");
    assert_eq!(
        methods.iter().filter(|m| **m == "tasks/get").count(),
        3,
        "{methods:?}"
    );
}
