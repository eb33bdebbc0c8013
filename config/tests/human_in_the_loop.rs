//! Human in the loop from YAML, through the Rust API a CLI uses: an agent
//! with `ask_user` and a tool with `approval: true`, a `user:` agent in a
//! round robin, and the example config. Each run ends waiting for input;
//! the answers are given with `respond` on the same built workflow.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_config::{BuildOptions, Built, Config};
use troupe_runtime::{
    Content, InputRequest, RunContext, RunResult, RunStatus, Thread, message::ToolResult,
};

async fn build(yaml: &str, path: &std::path::Path) -> Built {
    let config = Config::parse(yaml, path).unwrap_or_else(|e| panic!("{e}"));
    config.build(&BuildOptions::default()).await.unwrap()
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the test hung")
}

fn waiting(result: &RunResult) -> InputRequest {
    match &result.status {
        RunStatus::WaitingForInput(requests) if requests.len() == 1 => requests[0].clone(),
        other => panic!("expected one question, got {other:?}"),
    }
}

/// The tool results agent `agent` keeps in its own thread.
fn results_of(thread: &Thread, agent: &str) -> Vec<ToolResult> {
    let own = thread
        .child(agent)
        .unwrap_or_else(|| panic!("no thread for {agent}"));
    own.messages()
        .iter()
        .filter_map(|m| match &m.content {
            Content::ToolResults(r) => Some(r.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

const CLERK: &str = r#"
version: 1
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools:
      - ask_user
      - calculator: {approval: true}
    script:
      - tool_call: {name: ask_user, arguments: {question: "How much was each charge?"}}
      - tool_call: {name: calculator, arguments: {expression: "2 * 49.99 - 49.99"}}
      - "Refund worked out."
workflow:
  sequential: {participants: [clerk]}
"#;

#[tokio::test]
async fn ask_user_and_an_approved_tool_from_yaml() {
    bounded(async {
        let dir = tempfile_dir();
        let built = build(CLERK, &dir.join("clerk.yaml")).await;
        let wf = &built.workflow;
        let ctx = RunContext::new();
        let r = wf.run_task("I was charged twice.", &ctx).await.unwrap();
        let q = waiting(&r);
        assert_eq!(q.prompt, "How much was each charge?");

        let r = wf
            .respond_in_thread(r.thread, &q.id, "49.99", &ctx)
            .await
            .unwrap();
        let q = waiting(&r);
        assert_eq!(
            q.prompt,
            r#"approve calculator({"expression":"2 * 49.99 - 49.99"})? yes/no"#
        );
        let so_far = results_of(&r.thread, "clerk");
        assert_eq!(so_far.len(), 1);
        assert_eq!(so_far[0].name, "ask_user");
        assert_eq!(so_far[0].content, "49.99");

        let done = wf
            .respond_in_thread(r.thread, &q.id, "YES", &ctx)
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Completed);
        assert_eq!(done.final_text(), "Refund worked out.");
        let results = results_of(&done.thread, "clerk");
        assert_eq!(results[1].name, "calculator");
        assert_eq!(results[1].content, "49.99", "the approved call ran");
    })
    .await;
}

#[tokio::test]
async fn a_denied_tool_from_yaml_tells_the_model() {
    bounded(async {
        let dir = tempfile_dir();
        let built = build(CLERK, &dir.join("clerk.yaml")).await;
        let wf = &built.workflow;
        let ctx = RunContext::new();
        let r = wf.run_task("I was charged twice.", &ctx).await.unwrap();
        let q = waiting(&r);
        let r = wf
            .respond_in_thread(r.thread, &q.id, "49.99", &ctx)
            .await
            .unwrap();
        let q = waiting(&r);
        let done = wf
            .respond_in_thread(r.thread, &q.id, "no, ask a manager", &ctx)
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Completed);
        let results = results_of(&done.thread, "clerk");
        assert_eq!(results[1].name, "calculator");
        assert!(results[1].is_error);
        assert!(
            results[1].content.contains("denied") && results[1].content.contains("ask a manager"),
            "{}",
            results[1].content
        );
    })
    .await;
}

#[tokio::test]
async fn a_user_agent_in_a_round_robin_asks_and_speaks_the_answer() {
    bounded(async {
        let yaml = r#"
version: 1
models:
  m: {provider: scripted}
agents:
  writer:
    model: m
    script: ["Draft one.", "FINAL: draft two, shorter."]
  me:
    description: The caller, reviewing.
    user: {prompt: "Your notes on the draft?"}
workflow:
  round_robin: {participants: [writer, me]}
  stop: {text_mention: FINAL}
  max_turns: 10
"#;
        let dir = tempfile_dir();
        let built = build(yaml, &dir.join("team.yaml")).await;
        let wf = &built.workflow;
        let ctx = RunContext::new();
        let r = wf.run_task("Write a poem.", &ctx).await.unwrap();
        let q = waiting(&r);
        assert_eq!(q.agent, "me");
        assert_eq!(q.prompt, "Your notes on the draft?");
        assert_eq!(r.final_text(), "Draft one.");

        let done = wf
            .respond_in_thread(r.thread, &q.id, "Make it shorter.", &ctx)
            .await
            .unwrap();
        assert!(
            matches!(done.status, RunStatus::Stopped(_)),
            "{:?}",
            done.status
        );
        let spoken: Vec<(String, String)> = done
            .thread
            .messages()
            .iter()
            .filter(|m| !m.metadata.contains_key("troupe.request"))
            .map(|m| (m.source.to_string(), m.text_content().into_owned()))
            .collect();
        assert_eq!(
            spoken,
            [
                ("user".into(), "Write a poem.".into()),
                ("writer".into(), "Draft one.".into()),
                ("me".into(), "Make it shorter.".into()),
                ("writer".into(), "FINAL: draft two, shorter.".into()),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn the_example_config_asks_twice_then_the_supervisor_signs_off() {
    bounded(async {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let yaml =
            std::fs::read_to_string(root.join("examples/configs/human_in_the_loop.yaml")).unwrap();
        // Parsed as if it lived in a scratch directory: its store goes there.
        let dir = tempfile_dir();
        let built = build(&yaml, &dir.join("human_in_the_loop.yaml")).await;
        let store = built.store.as_ref().expect("the example keeps its runs");
        let wf = &built.workflow;
        let ctx = RunContext::new().with_run_id("refund-1");

        let r = wf.run_task("I was charged twice", &ctx).await.unwrap();
        let q = waiting(&r);
        assert_eq!(
            (q.agent.as_str(), q.prompt.as_str()),
            (
                "clerk",
                "Which order was charged twice, and how much was each charge?"
            )
        );
        let mut answers = vec![
            ("clerk", "order A-1001, 49.99 each"),
            ("clerk", "yes"),
            ("supervisor", "Signed off: sorry for the trouble."),
        ]
        .into_iter();
        let mut q = q;
        let done = loop {
            let (agent, answer) = answers.next().expect("no more questions expected");
            assert_eq!(q.agent, agent, "{}", q.prompt);
            let r = wf
                .respond(store.checkpoints.as_ref(), "refund-1", &q.id, answer, &ctx)
                .await
                .unwrap();
            match r.status {
                RunStatus::WaitingForInput(_) => q = waiting(&r),
                _ => break r,
            }
        };
        assert!(answers.next().is_none(), "every question was asked");
        assert_eq!(done.status, RunStatus::Completed);
        assert_eq!(done.final_text(), "Signed off: sorry for the trouble.");
        let results = results_of(&done.thread, "clerk");
        assert_eq!(results[1].content, "49.99", "the approved calculator ran");
    })
    .await;
}

/// A fresh directory under the target directory (no tempfile crate here).
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "troupe-hitl-{}-{}",
        std::process::id(),
        troupe_runtime::message::MessageId::new()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A config with agent `a` (a model) written as `agent_a`, plus `rest`.
fn config(agent_a: &str, rest: &str) -> String {
    format!(
        "version: 1\nmodels:\n  m: {{provider: scripted, replies: [hi]}}\nagents:\n{agent_a}{rest}"
    )
}

#[test]
fn misplaced_human_in_the_loop_settings_are_located_errors() {
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "approval on ask_user",
            config(
                "  a:\n    model: m\n    tools:\n      - ask_user: {approval: true}\n",
                "",
            ),
            "t.yaml:8:30: field `agents.a.tools[0].ask_user.approval`: `ask_user` asks the user already",
        ),
        (
            "approval on an agent",
            config("  a:\n    model: m\n    approval: true\n", ""),
            "t.yaml:7:5: field `agents.a.approval`: unknown field `approval`",
        ),
        (
            "approval that is not a yes or a list",
            config(
                "  a:\n    model: m\n    tools:\n      - mcp: {command: x, approval: always}\n",
                "",
            ),
            "t.yaml:8:37: field `agents.a.tools[0].mcp.approval`: wrong type: found the string \"always\" (expected `true`, `false`, or a list",
        ),
        (
            "approval of a tool the server does not expose",
            config(
                "  a:\n    model: m\n    tools:\n      - mcp: {command: x, tools: [read], approval: [write]}\n",
                "",
            ),
            "t.yaml:8:53: field `agents.a.tools[0].mcp.approval[0]`: `write` is not a tool of this server",
        ),
        (
            "a tool twice",
            config(
                "  a:\n    model: m\n    tools: [ask_user, calculator, ask_user]\n",
                "",
            ),
            "t.yaml:7:35: field `agents.a.tools[2]`: `ask_user` is listed twice",
        ),
        (
            "an unknown tool",
            config("  a:\n    model: m\n    tools: [ask_human]\n", ""),
            "t.yaml:7:13: field `agents.a.tools[0]`: unknown value `ask_human` (expected one of `calculator`, `current_time`, `word_count`, `ask_user`, `emit_event`, `yield_output`)",
        ),
        (
            "a scripted question without a question",
            config(
                "  a:\n    model: m\n    tools: [ask_user]\n    script:\n      - tool_call: {name: ask_user, arguments: {text: hi}}\n",
                "",
            ),
            "t.yaml:9:48: field `agents.a.script[0].tool_call.arguments`: `ask_user` takes one argument, `question`",
        ),
        (
            "a scripted question the agent cannot ask",
            config(
                "  a:\n    model: m\n    script:\n      - tool_call: {name: ask_user, arguments: {question: hi}}\n",
                "",
            ),
            "t.yaml:8:27: field `agents.a.script[0].tool_call.name`: the script calls `ask_user`, which this agent does not have",
        ),
        (
            "a user agent with a model",
            config("  a:\n    model: m\n    user: {}\n", ""),
            "t.yaml:6:5: field `agents.a.model`: a `user` agent is answered by the caller, not a model",
        ),
        (
            "neither a model nor user",
            config("  a:\n    description: who?\n", ""),
            "t.yaml:5:3: field `agents.a.model`: missing field `model`",
        ),
        (
            "a user agent as a map-reduce worker",
            config(
                "  a: {model: m}\n  me: {user: {}}\n",
                "workflow:\n  map_reduce: {mapper: a, worker: me, reducer: a}\n",
            ),
            "t.yaml:8:35: field `workflow.map_reduce.worker`: `me` is answered by the caller, but a map-reduce's worker",
        ),
        (
            "a user agent in a swarm",
            config(
                "  a: {model: m, handoffs: [me]}\n  me: {user: {}}\n",
                "workflow:\n  swarm: {participants: [a, me]}\n",
            ),
            "t.yaml:8:29: field `workflow.swarm.participants[1]`: `me` is answered by the caller, but a swarm moves on only by handoffs",
        ),
        (
            "the caller named as a participant",
            config(
                "  a: {model: m}\n",
                "workflow:\n  round_robin: {participants: [a, user]}\n  max_turns: 4\n",
            ),
            "t.yaml:7:35: field `workflow.round_robin.participants[1]`: `user` is the caller, not a participant (expected an agent with `user: {}`",
        ),
        (
            "a user agent on another node",
            config(
                "  a: {model: m}\n  me: {user: {}}\n",
                "workflow:\n  sequential: {participants: [a, me@n2]}\n",
            ),
            "t.yaml:8:34: field `workflow.sequential.participants[1]`: `me@n2` runs agent `me` on node `n2`, but `me` asks whoever runs the workflow",
        ),
    ];
    let mut failures = Vec::new();
    for (name, yaml, expected) in cases {
        match Config::parse(&yaml, "t.yaml") {
            Ok(_) => failures.push(format!("{name}: loaded without error")),
            Err(e) => {
                let text = e.to_string();
                if !text.lines().any(|l| l.starts_with(expected)) {
                    failures.push(format!("{name}: expected `{expected}`, got:\n{text}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
