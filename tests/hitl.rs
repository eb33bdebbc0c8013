//! Human in the loop as a user meets it: `troupe validate` on configs that
//! ask the user (exit 2 with file:line:col for misplaced settings), and an
//! MCP server whose listed tools wait for approval (the order desk built
//! into the `troupe` binary), built from YAML.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;
use common::wait;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use troupe::config::{BuildOptions, Config};
use troupe::{Content, RunContext, RunStatus, message::ToolResult};

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    let child = Command::new(TROUPE)
        .args(args)
        .current_dir(root())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start troupe");
    wait(child, Duration::from_secs(60))
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write config");
    p
}

#[test]
fn validate_places_human_in_the_loop_mistakes() {
    let ok = run(&["validate", "examples/configs/human_in_the_loop.yaml"]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(
        dir.path(),
        "bad.yaml",
        "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  splitter: {model: m}
  writer:
    model: m
    tools:
      - ask_user: {approval: true}
  me:
    user: {prompt: Your part?}
    model: m
workflow:
  map_reduce: {mapper: splitter, worker: me, reducer: writer}
",
    );
    let out = run(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "bad.yaml:9:30: field `agents.writer.tools[0].ask_user.approval`: `ask_user` asks the user already",
        "bad.yaml:12:5: field `agents.me.model`: a `user` agent is answered by the caller, not a model",
        "bad.yaml:14:42: field `workflow.map_reduce.worker`: `me` is answered by the caller",
    ] {
        assert!(err.contains(expected), "missing `{expected}` in:\n{err}");
    }
}

/// The results agent `support` keeps in its own thread.
fn results(thread: &troupe::Thread) -> Vec<ToolResult> {
    thread
        .child("support")
        .expect("the agent's thread")
        .messages()
        .iter()
        .filter_map(|m| match &m.content {
            Content::ToolResults(r) => Some(r.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn mcp_config(approval: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted}}
agents:
  support:
    model: m
    tools:
      - mcp:
          command: ${{TROUPE_EXE}}
          args: [mcp-demo]
          approval: {approval}
    script:
      - tool_calls:
          - {{name: refund_policy}}
          - {{name: lookup_order, arguments: {{order_id: A-1001}}}}
      - Checked.
"
    )
}

#[tokio::test]
async fn listed_mcp_tools_wait_for_approval_and_the_others_run() {
    let options = BuildOptions {
        troupe_exe: Some(PathBuf::from(TROUPE)),
        ..BuildOptions::default()
    };
    let config = Config::parse(&mcp_config("[lookup_order]"), "mcp.yaml").unwrap();
    let built = config.build(&options).await.unwrap();
    let ctx = RunContext::new();
    let r = built
        .workflow
        .run_task("Where is my order?", &ctx)
        .await
        .unwrap();
    let RunStatus::WaitingForInput(requests) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert_eq!(
        requests[0].prompt,
        r#"approve lookup_order({"order_id":"A-1001"})? yes/no"#
    );
    let so_far = results(&r.thread);
    assert_eq!(so_far.len(), 1, "refund_policy ran without asking");
    assert_eq!(so_far[0].name, "refund_policy");

    let id = requests[0].id.clone();
    let done = built
        .workflow
        .respond_in_thread(r.thread, &id, "approved", &ctx)
        .await
        .unwrap();
    assert_eq!(done.final_text(), "Checked.");
    let all = results(&done.thread);
    assert_eq!(all[1].name, "lookup_order");
    assert!(all[1].content.contains("espresso"), "{}", all[1].content);
    built.close().await;

    // A name the server does not have is refused when it connects.
    let config = Config::parse(&mcp_config("[lookup_orders]"), "mcp.yaml").unwrap();
    let err = config.build(&options).await.unwrap_err().to_string();
    assert!(
        err.contains("`approval` names `lookup_orders`, which the server does not offer"),
        "{err}"
    );
}
