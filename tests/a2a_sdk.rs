//! Acceptance of A2A both ways against the official Python SDK
//! (`a2a-sdk`): its client drives teams served by `troupe serve`
//! (tests/py/a2a_sdk_client.py does the checking), and troupe teams with
//! an `a2a` participant, run with the `troupe` binary, call an echo agent
//! served by the SDK's server (tests/py/a2a_echo_server.py): streaming,
//! contexts kept across turns, input required and answered, a failed
//! remote task, and (through the Rust API) a cancelled run cancelling the
//! remote task.
//!
//! The SDK lives in a venv that `.ci/python-venv.sh` makes
//! (`target/py-venv`, or `TROUPE_PY_VENV`). Without it the tests fail,
//! saying how to make it, unless `TROUPE_ALLOW_SKIP=1` (never in CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::serve::Server;
use common::{jsonl, result_line, run, text, troupe, wait, write};

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("TROUPE_PY_VENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import a2a, uvicorn"])
            .output()
            .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    common::prereq::missing_venv("a2a-sdk and uvicorn");
    None
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

/// The SDK's echo agent, running; killed when dropped.
struct Echo {
    child: Child,
    base: String,
    stderr: mpsc::Receiver<String>,
}

impl Echo {
    // The child is waited for when dropped.
    #[allow(clippy::zombie_processes)]
    fn start(python: &Path, args: &[&str]) -> Echo {
        let mut child = Command::new(python)
            .arg(script("a2a_echo_server.py"))
            .args(args)
            .env("NO_PROXY", "127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let Some(base) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let said: Vec<String> = stderr.try_iter().collect();
            panic!("the echo agent did not start: {line}\n{}", said.join("\n"));
        };
        Echo {
            base: base.to_string(),
            child,
            stderr,
        }
    }

    /// Waits for a stderr line containing `needle`.
    fn said(&self, needle: &str) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A team whose one participant is the remote agent at `url`.
fn relay(url: &str) -> String {
    format!(
        "version: 1
name: relay
agents:
  remote:
    description: The SDK's echo agent.
    a2a: {{url: \"{url}\", timeout: 20s, retry: {{attempts: 2, initial: 10ms}}}}
workflow:
  steps:
    - agent: remote
checkpoint: {{store: sqlite, path: state/runs.db}}
"
    )
}

#[test]
fn the_sdk_client_drives_served_teams() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "desk.yaml",
        "version: 1
name: desk
description: A writer and an editor.
models:
  m: {provider: scripted, stream: true}
agents:
  writer: {description: Drafts., model: m, script: [draft one, draft two, draft three]}
  editor: {description: Edits., model: m, script: [final one, final two, final three]}
workflow:
  steps:
    - agent: writer
    - agent: editor
",
    );
    write(dir.path(), "asking.yaml", common::serve::ASKING);
    write(dir.path(), "slow.yaml", common::serve::SLOW);
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", "a2a-token")]);
    let out = Command::new(python)
        .arg(script("a2a_sdk_client.py"))
        .args([s.base.as_str(), "a2a-token"])
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "ok");
}

#[test]
fn the_sdk_client_calls_every_other_method() {
    // tests/py/a2a_sdk_methods.py: a non-blocking send seen working,
    // subscribed to from a second connection, completed; ListTasks,
    // GetTask's historyLength, push configs, the extended card, errors.
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", common::serve::ASKING);
    write(dir.path(), "slowish.yaml", common::a2a::SLOWISH);
    write(dir.path(), "ledger.yaml", common::a2a::LEDGER);
    let s = Server::start(dir.path(), &["."], &[("TROUPE_SERVE_TOKEN", "a2a-token")]);
    let out = Command::new(python)
        .arg(script("a2a_sdk_methods.py"))
        .args([s.base.as_str(), "a2a-token"])
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "ok");
}

#[test]
fn a_team_streams_from_the_sdk_echo_agent_and_keeps_its_context() {
    let Some(python) = python() else { return };
    let echo = Echo::start(&python, &[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "relay.yaml", &relay(&echo.base));
    let cfg = cfg.to_str().unwrap();

    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", cfg, "hello there"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let deltas: Vec<String> = jsonl(&out)
        .iter()
        .filter(|e| e["type"] == "text_delta" && e["path"] == "relay/remote")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    // The echo streams word by word; the pieces, joined, are the answer.
    assert_eq!(deltas.len(), 4, "{deltas:?}");
    assert_eq!(deltas.concat(), "echo #1: hello there");
    assert_eq!(result_line(&out)["final_response"], "echo #1: hello there");

    // A chat session: the second turn goes on in the remote context.
    let mut child = troupe(
        dir.path(),
        &["chat", "--quiet", "--session", "s", "--new", cfg],
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"first\nsecond\n/exit\n")
        .unwrap();
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("echo #1: first"), "{said}");
    assert!(said.contains("echo #2: second"), "{said}");
}

#[test]
fn a_team_answers_the_sdk_agent_and_fails_with_it() {
    let Some(python) = python() else { return };
    let echo = Echo::start(&python, &["--no-streaming"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "relay.yaml", &relay(&echo.base));
    let cfg = cfg.to_str().unwrap();

    // Without streaming: one whole answer.
    let out = run(dir.path(), &["run", cfg, "plain"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("echo #1: plain"),
        "{}",
        text(&out.stdout)
    );

    // Input required: the run waits (exit 3) on the remote's question…
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "q",
            cfg,
            "ask me",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    let request = &result["requests"][0];
    assert_eq!(request["prompt"], "Which colour?", "{result}");
    let id = request["id"].as_str().unwrap();
    // …and the answer, in another process, goes back to the same task.
    let answer = format!("{id}=blue");
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--resume",
            "q",
            "--answer",
            &answer,
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("colour: blue"),
        "{}",
        text(&out.stdout)
    );

    // A failed remote task fails the run, saying why.
    let out = run(dir.path(), &["run", cfg, "fail now"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("ended failed: the echo agent refuses: fail now"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_cancels_the_sdk_agents_task() {
    // Cancelled once the echo agent works on the task, and troupe has had
    // time to hear its id.
    cancel_relay("slow, please", "working ", Duration::from_millis(500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_before_the_sdk_agent_names_its_task_still_cancels_it() {
    // Cancelled while the echo agent holds the request but has not named
    // the task yet (it waits a second first): troupe cancels it once named.
    cancel_relay("late, please", "starting ", Duration::ZERO).await;
}

/// Runs a relay to the echo agent with `task`, cancels the run once the
/// echo agent said `started` (and `after` more), and checks that the echo
/// agent was told to cancel the task.
async fn cancel_relay(task: &'static str, started: &'static str, after: Duration) {
    let Some(python) = python() else { return };
    let echo = tokio::task::spawn_blocking(move || Echo::start(&python, &[]))
        .await
        .unwrap();
    let client = troupe::agents::a2a::A2aClient::builder(echo.base.clone())
        .build()
        .unwrap();
    let team = troupe::Workflow::builder()
        .name("relay")
        .participant(troupe::agents::a2a::A2aAgent::new("remote", client))
        .build()
        .unwrap();
    let ctx = troupe::RunContext::new();
    let run = {
        let ctx = ctx.clone();
        tokio::spawn(async move { team.run_task(task, &ctx).await })
    };
    let (echo, working) = tokio::task::spawn_blocking(move || {
        let working = echo.said(started);
        (echo, working)
    })
    .await
    .unwrap();
    assert!(working, "the echo agent never started the task");
    tokio::time::sleep(after).await;
    ctx.cancel();
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run ends once cancelled")
        .unwrap();
    assert!(
        matches!(
            result.as_ref().map(|r| &r.status),
            Ok(troupe::RunStatus::Cancelled) | Err(_)
        ),
        "{result:?}"
    );
    let said = tokio::task::spawn_blocking(move || echo.said("cancelled "))
        .await
        .unwrap();
    assert!(said, "the echo agent was never told to cancel");
}

#[test]
fn an_interrupted_troupe_run_cancels_the_sdk_agents_task_before_it_exits() {
    let Some(python) = python() else { return };
    let echo = Echo::start(&python, &[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "relay.yaml", &relay(&echo.base));
    let cfg = cfg.to_str().unwrap();
    let mut child = troupe(
        dir.path(),
        &[
            "run",
            "--events",
            "jsonl",
            "--grace",
            "0",
            cfg,
            "slow, please",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Interrupted once the remote task is under way.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("\"agent_started\"") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the remote agent's turn starts");
    assert!(
        echo.said("working "),
        "the echo agent never started the slow task"
    );
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        echo.said("cancelled "),
        "the echo agent was never told to cancel before troupe exited"
    );
}
