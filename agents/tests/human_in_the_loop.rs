//! A ChatAgent asking the user, in a workflow with a checkpoint store: the
//! `ask_user` tool, tools that need approval, several questions in one
//! answer, and an asking user proxy. Each run ends waiting for input; the
//! answer is given with `respond`, and the model's next request shows it
//! as the result of the right call.

// Test helpers may fail loudly: a timeout or a malformed reply is a failed
// test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatMessage, ChatRequest, FunctionTool, NeedsApproval, ScriptedModel, ScriptedReply,
    ToolMessages, UserProxy,
};
use troupe_runtime::store::MemoryStore;
use troupe_runtime::{Content, InputRequest, RunContext, RunResult, RunStatus, Workflow};

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the test hung")
}

#[derive(Deserialize, JsonSchema)]
struct File {
    path: String,
}

/// A `delete_file` tool that counts its runs, needing approval.
fn delete_file(runs: Arc<AtomicUsize>) -> NeedsApproval<FunctionTool> {
    NeedsApproval::new(FunctionTool::new(
        "delete_file",
        "Deletes a file.",
        move |f: File| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("deleted {}", f.path))
            }
        },
    ))
}

/// `agent` alone in a workflow that checkpoints to `store`.
fn desk(agent: ChatAgent, store: Arc<MemoryStore>) -> Workflow {
    Workflow::builder()
        .name("desk")
        .participant(agent)
        .checkpoint_store(store)
        .build()
        .unwrap()
}

fn waiting(result: &RunResult) -> Vec<InputRequest> {
    match &result.status {
        RunStatus::WaitingForInput(requests) => requests.clone(),
        other => panic!("expected to wait for input, got {other:?}"),
    }
}

/// The tool messages of a request, as `(call id, content)`.
fn tool_messages(request: &ChatRequest) -> Vec<(String, String)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { call_id, content } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

/// Every assistant message with tool calls is followed by one tool message
/// per call (the OpenAI wire format), and no user message carries an
/// answer that is already a tool result.
fn assert_paired(request: &ChatRequest) {
    let messages = &request.messages;
    for (i, m) in messages.iter().enumerate() {
        if let ChatMessage::Assistant { tool_calls, .. } = m
            && !tool_calls.is_empty()
        {
            let following: Vec<&str> = messages[i + 1..]
                .iter()
                .map_while(|m| match m {
                    ChatMessage::Tool { call_id, .. } => Some(call_id.as_str()),
                    _ => None,
                })
                .collect();
            let mut ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
            let mut answered = following.clone();
            ids.sort_unstable();
            answered.sort_unstable();
            assert_eq!(ids, answered, "calls and results of {m:?}");
        }
    }
}

#[tokio::test]
async fn ask_user_waits_and_the_answer_is_the_result_of_its_call() {
    bounded(async {
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_call("ask_user", json!({"question": "Which city?"})),
            ScriptedReply::text("Booked in Oslo."),
        ]));
        let agent = ChatAgent::builder("clerk")
            .model_arc(model.clone())
            .ask_user()
            .build()
            .unwrap();
        let store = Arc::new(MemoryStore::new());
        let wf = desk(agent, store.clone());
        let ctx = RunContext::new().with_run_id("r1");
        let first = wf.run_task("Book me a hotel.", &ctx).await.unwrap();
        let requests = waiting(&first);
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].prompt, "Which city?");
        assert_eq!(requests[0].agent, "clerk");
        assert!(first.checkpoint.is_some(), "waiting saves a checkpoint");

        let done = wf
            .respond(store.as_ref(), "r1", &requests[0].id, "Oslo", &ctx)
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Completed);
        assert_eq!(done.final_text(), "Booked in Oslo.");

        let requests = model.requests();
        assert_eq!(requests.len(), 2, "one call per model answer");
        let second = &requests[1];
        assert_paired(second);
        let ChatMessage::Assistant { tool_calls, .. } = &second.messages[1] else {
            panic!(
                "the call stays in the agent's thread: {:?}",
                second.messages
            );
        };
        assert_eq!(tool_calls[0].name, "ask_user");
        assert_eq!(
            tool_messages(second),
            [(tool_calls[0].id.clone(), "Oslo".to_string())]
        );
        assert!(
            !second
                .messages
                .iter()
                .any(|m| matches!(m, ChatMessage::User { content, .. } if content == "Oslo")),
            "the answer is the call's result, not a user turn too: {:?}",
            second.messages
        );
        assert!(
            second.tools.iter().any(|t| t.name == "ask_user"),
            "the model sees the tool"
        );
    })
    .await;
}

#[tokio::test]
async fn an_approved_call_runs_and_a_denied_one_tells_the_model() {
    bounded(async {
        for (answer, runs_expected) in [("Yes", 1), ("no, keep it", 0)] {
            let runs = Arc::new(AtomicUsize::new(0));
            let model = Arc::new(ScriptedModel::new([
                ScriptedReply::tool_call("delete_file", json!({"path": "a.txt"})),
                ScriptedReply::text("Done."),
            ]));
            let agent = ChatAgent::builder("janitor")
                .model_arc(model.clone())
                .tool(delete_file(runs.clone()))
                .build()
                .unwrap();
            let store = Arc::new(MemoryStore::new());
            let wf = desk(agent, store.clone());
            let ctx = RunContext::new().with_run_id("r");
            let first = wf.run_task("Clean up.", &ctx).await.unwrap();
            let requests = waiting(&first);
            assert_eq!(
                requests[0].prompt,
                r#"approve delete_file({"path":"a.txt"})? yes/no"#
            );
            assert_eq!(
                runs.load(Ordering::SeqCst),
                0,
                "nothing runs before the answer"
            );

            let done = wf
                .respond(store.as_ref(), "r", &requests[0].id, answer, &ctx)
                .await
                .unwrap();
            assert_eq!(done.final_text(), "Done.");
            assert_eq!(
                runs.load(Ordering::SeqCst),
                runs_expected,
                "answer {answer:?}"
            );
            let seen = &model.requests()[1];
            assert_paired(seen);
            let results = tool_messages(seen);
            assert_eq!(results.len(), 1);
            if runs_expected == 1 {
                assert_eq!(results[0].1, "deleted a.txt");
            } else {
                assert!(
                    results[0].1.contains("denied") && results[0].1.contains("no, keep it"),
                    "{}",
                    results[0].1
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn two_approvals_in_one_answer_are_asked_one_at_a_time() {
    bounded(async {
        let runs = Arc::new(AtomicUsize::new(0));
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_calls([
                ("delete_file", json!({"path": "a.txt"})),
                ("delete_file", json!({"path": "b.txt"})),
            ]),
            ScriptedReply::text("Deleted a.txt only."),
        ]));
        let agent = ChatAgent::builder("janitor")
            .model_arc(model.clone())
            .tool(delete_file(runs.clone()))
            .build()
            .unwrap();
        let store = Arc::new(MemoryStore::new());
        let wf = desk(agent, store.clone());
        let ctx = RunContext::new().with_run_id("two");
        let first = waiting(&wf.run_task("Clean up.", &ctx).await.unwrap());
        assert_eq!(first.len(), 1, "one question at a time");
        assert!(first[0].prompt.contains("a.txt"), "{}", first[0].prompt);

        let second = wf
            .respond(store.as_ref(), "two", &first[0].id, "y", &ctx)
            .await
            .unwrap();
        let second = waiting(&second);
        assert!(second[0].prompt.contains("b.txt"), "{}", second[0].prompt);
        assert_ne!(second[0].id, first[0].id);
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the first ran on its yes");
        assert_eq!(
            model.requests().len(),
            1,
            "no model call between the two questions"
        );

        let done = wf
            .respond(store.as_ref(), "two", &second[0].id, "No", &ctx)
            .await
            .unwrap();
        assert_eq!(done.final_text(), "Deleted a.txt only.");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the second was denied");
        let seen = &model.requests()[1];
        assert_paired(seen);
        let results = tool_messages(seen);
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0], ("call_1_0".into(), "deleted a.txt".into()));
        assert_eq!(results[1].0, "call_1_1");
        assert!(results[1].1.contains("denied"), "{}", results[1].1);
    })
    .await;
}

#[tokio::test]
async fn other_calls_of_the_answer_run_before_the_question() {
    bounded(async {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let lookup = FunctionTool::new("lookup", "Looks a file up.", move |f: File| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("{} is 3 KB", f.path))
            }
        });
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_calls([
                ("lookup", json!({"path": "a.txt"})),
                ("ask_user", json!({"question": "Delete a.txt?"})),
                ("ask_user", json!({"oops": 1})),
            ]),
            ScriptedReply::text("Keeping it."),
        ]));
        // Tool calls and results in the reply, routed like any message.
        let agent = ChatAgent::builder("janitor")
            .model_arc(model.clone())
            .tool(lookup)
            .ask_user()
            .tool_messages(ToolMessages::Reply)
            .build()
            .unwrap();
        let wf = Workflow::builder()
            .name("desk")
            .participant(agent)
            .build()
            .unwrap();
        let ctx = RunContext::new();
        let first = wf.run_task("Tidy up.", &ctx).await.unwrap();
        let requests = waiting(&first);
        assert_eq!(requests[0].prompt, "Delete a.txt?");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "lookup ran before the question"
        );
        assert!(
            first
                .messages
                .iter()
                .any(|m| matches!(&m.content, Content::ToolCalls(c) if c.len() == 3)),
            "the calls are in the reply"
        );

        let done = wf
            .respond_in_thread(first.thread, &requests[0].id, "no", &ctx)
            .await
            .unwrap();
        assert_eq!(done.final_text(), "Keeping it.");
        let seen = &model.requests()[1];
        assert_paired(seen);
        let results = tool_messages(seen);
        assert_eq!(
            results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            ["call_1_0", "call_1_2", "call_1_1"]
        );
        assert_eq!(results[0].1, "a.txt is 3 KB");
        assert!(
            results[1].1.contains("question"),
            "senseless arguments: {}",
            results[1].1
        );
        assert_eq!(results[2].1, "no", "ask_user's answer is taken as given");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "nothing ran twice");
    })
    .await;
}

#[tokio::test]
async fn an_asking_user_proxy_speaks_the_answer() {
    bounded(async {
        let writer = ChatAgent::builder("writer")
            .model(ScriptedModel::new([ScriptedReply::text("A draft.")]))
            .build()
            .unwrap();
        let reviewer = UserProxy::ask("reviewer");
        let wf = Workflow::builder()
            .name("review")
            .participant(writer)
            .participant(reviewer)
            .router(
                troupe_runtime::Router::builder()
                    .add_route("user", "writer")
                    .add_route("writer", "reviewer")
                    .output("reviewer"),
            )
            .build()
            .unwrap();
        let ctx = RunContext::new();
        let first = wf.run_task("Write.", &ctx).await.unwrap();
        let requests = waiting(&first);
        assert_eq!(requests[0].agent, "reviewer");
        assert_eq!(
            requests[0].prompt, "A draft.",
            "the last message is the prompt"
        );
        let done = wf
            .respond_in_thread(first.thread, &requests[0].id, "Looks good.", &ctx)
            .await
            .unwrap();
        assert_eq!(done.status, RunStatus::Completed);
        let last = done.final_response.unwrap();
        assert_eq!(&*last.source, "reviewer");
        assert_eq!(last.text_content(), "Looks good.");
    })
    .await;
}

#[tokio::test]
async fn an_agent_called_as_a_tool_cannot_ask() {
    bounded(async {
        let inner = ChatAgent::builder("helper")
            .model(ScriptedModel::new([ScriptedReply::tool_call(
                "ask_user",
                json!({"question": "Which?"}),
            )]))
            .ask_user()
            .build()
            .unwrap();
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_call("helper", json!({"request": "help"})),
            ScriptedReply::text("Could not."),
        ]));
        let outer = ChatAgent::builder("boss")
            .model_arc(model.clone())
            .agent_tool(inner, troupe_agents::ThreadMode::Fresh)
            .build()
            .unwrap();
        let reply = troupe_runtime::Agent::run(
            &outer,
            Arc::new(troupe_runtime::Thread::from_messages([
                troupe_runtime::Message::user("go"),
            ])),
            RunContext::new(),
        )
        .await
        .unwrap();
        assert_eq!(reply.messages()[0].text_content(), "Could not.");
        let results = tool_messages(&model.requests()[1]);
        assert!(
            results[0].1.contains("wants to ask the user"),
            "{}",
            results[0].1
        );
    })
    .await;
}

#[tokio::test]
async fn a_tool_named_ask_user_clashes_with_the_built_in_one() {
    let clash = FunctionTool::new("ask_user", "Mine.", |f: File| async move {
        Ok::<_, String>(f.path)
    });
    let e = ChatAgent::builder("a")
        .model(ScriptedModel::new([]))
        .tool(clash)
        .ask_user()
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("two tools named 'ask_user'"), "{e}");
}
