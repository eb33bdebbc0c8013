//! Every model call is metered, priced and budgeted, whoever makes it, and
//! the events name the model that answered — through the `troupe` binary.
//!
//! - A Magentic manager, a selector and a planner with `pricing:` and a
//!   `max_cost` budget: the run stops on the budget, their calls have
//!   `model_call_finished` events with a cost, and the cost the run reports
//!   is the sum of every call's.
//! - A model whose `fallback:` takes over when a server on 127.0.0.1 fails
//!   the primary: one `model_failover` event naming both and why, the
//!   call's other events name the model that answered, priced at its
//!   prices.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::{jsonl, result_line, run, text, write};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Output;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The events of type `kind` of a `--events jsonl` run.
fn events(out: &Output, kind: &str) -> Vec<serde_json::Value> {
    jsonl(out)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// Runs `cfg` (written into a fresh directory as `name`) on `task` with
/// `--events jsonl`; checks it stopped on `max_cost`, that `who` made
/// priced calls, and that the reported cost is the calls' sum.
fn stops_on_the_budget(name: &str, cfg: &str, task: &str, who: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), name, cfg);
    let out = run(
        dir.path(),
        &["run", "--offline", "--events", "jsonl", name, task],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["status"], "stopped", "{result}");
    assert!(
        result["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("max_cost("),
        "{result}"
    );
    let calls = events(&out, "model_call_finished");
    let theirs: Vec<&serde_json::Value> = calls
        .iter()
        .filter(|c| c["path"].as_str().unwrap_or_default().ends_with(who))
        .collect();
    assert!(!theirs.is_empty(), "no call by {who}: {calls:?}");
    for c in &calls {
        assert!(c["cost"].as_f64().is_some_and(|x| x > 0.0), "unpriced: {c}");
    }
    let sum: f64 = calls.iter().filter_map(|c| c["cost"].as_f64()).sum();
    let total = result["stats"]["total"]["cost"].as_f64().expect("a cost");
    assert!((sum - total).abs() < 1e-9, "{sum} vs {total}: {result}");
    let counted = result["stats"]["total"]["model_calls"].as_u64().unwrap();
    assert_eq!(counted, calls.len() as u64, "{result}");
}

/// An example config with `pricing:` after each model's `model:` line and
/// `stop` replaced by `budget`.
fn priced(example: &str, stop: (&str, &str)) -> String {
    let body = std::fs::read_to_string(root().join("examples/configs").join(example))
        .expect("read the example");
    let priced = body.replace(
        "    model: ${OPENAI_MODEL:-gpt-4o-mini}\n",
        "    model: ${OPENAI_MODEL:-gpt-4o-mini}\n    pricing: {input: 1000, output: 2000}\n",
    );
    assert!(priced.contains(stop.0), "{example}: no `{}`", stop.0);
    priced.replace(stop.0, stop.1)
}

#[test]
fn a_magentic_managers_calls_are_priced_and_budgeted() {
    let cfg = priced(
        "magentic.yaml",
        (
            "    max_resets: 2\n",
            "    max_resets: 2\n  stop: {max_cost: 0.5}\n",
        ),
    );
    stops_on_the_budget("magentic.yaml", &cfg, "when did Rust 1.0 ship", "/manager");
}

#[test]
fn a_selectors_calls_are_priced_and_budgeted() {
    let cfg = priced(
        "selector.yaml",
        (
            "    text_mention: LGTM\n",
            "    any: [{text_mention: LGTM}, {max_cost: 0.3}]\n",
        ),
    );
    stops_on_the_budget("selector.yaml", &cfg, "reverse a string", "/selector");
}

#[test]
fn a_planners_calls_are_priced_and_budgeted() {
    let plan = "STEPS:\\nSUGGEST [barista]: Suggest a drink\\nORDER [starbucks]: Order it\\nLUNCH [mcdonalds]: Order lunch\\nGRAPH:\\nSUGGEST -> ORDER\\nLUNCH";
    let cfg = format!(
        "version: 1
models:
  m: {{provider: scripted, pricing: {{input: 1000, output: 2000}}}}
agents:
  barista: {{model: m, script: [A grande oat-milk latte.]}}
  starbucks: {{model: m, script: [Ordered the latte at Starbucks.]}}
  mcdonalds: {{model: m, script: [\"Ordered a McChicken meal at McDonald's.\"]}}
workflow:
  plan:
    planner:
      model: m
      agents: [barista, starbucks, mcdonalds]
      script: [\"{plan}\"]
  stop: {{max_cost: 0.01}}
"
    );
    stops_on_the_budget("planner.yaml", &cfg, "a drink and lunch", "/planner");
}

/// A chat-completions server on 127.0.0.1 that answers 503 to requests
/// for model `primary` and a priced answer to any other; its base URL.
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(n) = lower.strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let body = String::from_utf8_lossy(&body);
            let (status, reply) = if body.contains("\"model\":\"primary\"") {
                (
                    "503 Service Unavailable",
                    "{\"error\":{\"message\":\"overloaded\"}}".to_string(),
                )
            } else {
                (
                    "200 OK",
                    "{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"backup\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"from the backup\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}".to_string(),
                )
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    url
}

#[test]
fn a_fallback_that_takes_over_is_named_in_the_events_and_priced_as_itself() {
    let url = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = format!(
        "version: 1
models:
  primary:
    provider: openai
    model: primary
    base_url: {url}
    api_key_env: TROUPE_TEST_KEY
    retries: 1
    stream: false
    fallback: [backup]
    pricing: {{input: 1, output: 1}}
  backup:
    provider: openai
    model: backup
    base_url: {url}
    api_key_env: TROUPE_TEST_KEY
    stream: false
    pricing: {{input: 1000, output: 2000}}
agents:
  a: {{model: primary}}
workflow:
  sequential: {{participants: [a, a2]}}
"
    )
    .replace(
        "agents:\n  a: {model: primary}\n",
        "agents:\n  a: {model: primary}\n  a2: {model: primary}\n",
    );
    write(dir.path(), "fallback.yaml", &cfg);
    let mut cmd = common::troupe(
        dir.path(),
        &["run", "--events", "jsonl", "fallback.yaml", "go"],
    );
    cmd.env("TROUPE_TEST_KEY", "k");
    let out = common::wait(
        cmd.spawn().expect("start"),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Two agents, two calls: the first fails over and rests the primary,
    // the second goes to the backup at once (no failover to report).
    let failovers = events(&out, "model_failover");
    assert_eq!(failovers.len(), 1, "{failovers:?}");
    let f = &failovers[0];
    assert_eq!(f["model"], "primary", "{f}");
    assert_eq!(f["next"], "backup", "{f}");
    assert!(
        f["error"].as_str().unwrap_or_default().contains("503"),
        "{f}"
    );
    let finished = events(&out, "model_call_finished");
    assert_eq!(finished.len(), 2, "{finished:?}");
    for c in &finished {
        assert_eq!(c["model"], "backup", "{c}");
        // 100 tokens in at $1000/M and 10 out at $2000/M: the backup's.
        assert!((c["cost"].as_f64().unwrap() - 0.12).abs() < 1e-9, "{c}");
    }
    let started = events(&out, "model_call_started");
    assert!(
        started.iter().any(|s| s["model"] == "primary"),
        "{started:?}"
    );
    assert!(
        started.iter().any(|s| s["model"] == "backup"),
        "{started:?}"
    );
    let result = result_line(&out);
    let total = result["stats"]["total"]["cost"].as_f64().unwrap();
    assert!((total - 0.24).abs() < 1e-9, "{result}");
}
