//! Helpers shared by the tests that run the `troupe` binary.
//!
//! Each test crate compiles this module on its own and uses part of it.
#![allow(dead_code)]
// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

pub mod a2a;
pub mod mcp_eras;
pub mod pg;
pub mod prereq;
pub mod serve;
pub mod sse_model;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `troupe` binary under test.
pub const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

/// Waits for the child, killing it after `limit`: a hang fails the test
/// instead of the suite. Its output is read while it runs, so a child that
/// writes more than a pipe holds (the JSON Schema does) is not blocked.
pub fn wait(mut child: Child, limit: Duration) -> Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "troupe did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&stdout.join().unwrap_or_default()),
                    String::from_utf8_lossy(&stderr.join().unwrap_or_default())
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("waiting for troupe: {e}"),
        }
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// A `troupe` command run offline, in `dir`, without a terminal.
pub fn troupe(dir: &Path, args: &[&str]) -> Command {
    troupe_under(dir, &[], args)
}

/// [`troupe`], started through `wrapper` (a program and its arguments,
/// which then exec `troupe ARGS`; none: troupe itself).
pub fn troupe_under(dir: &Path, wrapper: &[&str], args: &[&str]) -> Command {
    let mut cmd = match wrapper.split_first() {
        Some((program, before)) => {
            let mut cmd = Command::new(program);
            cmd.args(before).arg(TROUPE);
            cmd
        }
        None => Command::new(TROUPE),
    };
    cmd.args(args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        // Logs and span export only where a test asks for them.
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("TROUPE_CAPTURE_CONTENT")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `troupe args` in `dir` to its end (30 s at most).
pub fn run(dir: &Path, args: &[&str]) -> Output {
    wait(
        troupe(dir, args).spawn().expect("start troupe"),
        Duration::from_secs(30),
    )
}

/// Bytes of a child's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes config `name` into `dir`; its path.
pub fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write config");
    p
}

/// Lines of a child's pipe as they come, on a thread of their own.
pub fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Reads lines until one contains every one of `needles`; all of them.
pub fn until(rx: &mpsc::Receiver<String>, needles: &[&str]) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let hit = needles.iter().all(|n| l.contains(n));
            seen.push(l);
            if hit {
                return seen;
            }
        }
    }
    panic!("never saw {needles:?} in:\n{}", seen.join("\n"));
}

/// The runs `troupe runs --json` lists, newest first.
pub fn listed(dir: &Path, cfg: &str) -> Vec<serde_json::Value> {
    let out = run(dir, &["runs", "--json", cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The JSON lines of a `--events jsonl` run: its events, then its result.
pub fn jsonl(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The prompt tokens of the last model call of a `--events jsonl` run.
pub fn last_prompt_tokens(out: &Output) -> u64 {
    jsonl(out)
        .iter()
        .filter(|e| e["type"] == "model_call_finished")
        .filter_map(|e| e["usage"]["prompt_tokens"].as_u64())
        .next_back()
        .expect("a model_call_finished event with usage")
}

/// The result line of a `--events jsonl` run.
pub fn result_line(out: &Output) -> serde_json::Value {
    let all = jsonl(out);
    let last = all.last().expect("a result line");
    assert_eq!(last["type"], "result", "{last}");
    last.clone()
}

/// The thread run `run_id` of config `cfg` ended with, read back from the
/// config's store through the workflow (as a resume of it would).
pub fn final_thread(cfg: &Path, run_id: &str) -> troupe::Thread {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let config = troupe::config::Config::load(cfg).expect("config");
        let built = config
            .build(&troupe::config::BuildOptions::default())
            .await
            .expect("build");
        let r = built
            .workflow
            .resume(run_id, &troupe::RunContext::new())
            .await
            .unwrap_or_else(|e| panic!("{run_id}: {e}"));
        built.close().await;
        r.thread
    })
}

/// The `tool_result` events of a `--events jsonl` run: (path, result).
pub fn tool_results(out: &Output) -> Vec<(String, serde_json::Value)> {
    jsonl(out)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| {
            (
                e["path"].as_str().expect("a path").to_string(),
                e["result"].clone(),
            )
        })
        .collect()
}

/// The texts the run's `message_produced` events carry: (path, text).
pub fn produced(out: &Output) -> Vec<(String, String)> {
    jsonl(out)
        .into_iter()
        .filter(|e| e["type"] == "message_produced")
        .filter_map(|e| {
            let text = e["message"]["content"]["Text"].as_str()?.to_string();
            Some((e["path"].as_str()?.to_string(), text))
        })
        .collect()
}

/// The ids of the requests a result (or a listed run) waits on, by prompt.
pub fn request_id(requests: &serde_json::Value, prompt: &str) -> String {
    requests
        .as_array()
        .expect("requests")
        .iter()
        .find(|q| q["prompt"] == prompt)
        .and_then(|q| q["id"].as_str())
        .unwrap_or_else(|| panic!("no request `{prompt}` in {requests}"))
        .to_string()
}

/// Run `id` as `troupe runs --json` lists it.
pub fn run_listed(dir: &Path, cfg: &str, id: &str) -> serde_json::Value {
    listed(dir, cfg)
        .into_iter()
        .find(|r| r["run_id"] == id)
        .unwrap_or_else(|| panic!("run `{id}` not listed"))
}
