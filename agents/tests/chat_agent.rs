//! ChatAgent behaviour, offline with the scripted model: the tool loop,
//! handoffs, structured output, agents as tools, context and memory,
//! cancellation.

// Test helpers may fail loudly: a timeout, a malformed reply or a
// poisoned witness is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    AgentTool, ChatAgent, ChatMessage, ChatModel, ChatRequest, ChatResponse, ContextPolicy,
    FunctionTool, ModelError, ResponseFormat, ScriptedModel, ScriptedReply, ThreadMode, ToolChoice,
    ToolError, ToolMessages, ToolOutput, async_trait,
};
use troupe_runtime::{
    Agent, AgentError, Content, Event, FnAgent, Message, Reply, Router, RunContext, Thread,
    Workflow, message::ToolCall, message::ToolResult,
};

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the test hung")
}

fn ask(text: &str) -> Arc<Thread> {
    Arc::new(Thread::from_messages([Message::user(text)]))
}

#[derive(Deserialize, JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

fn arithmetic() -> [FunctionTool; 2] {
    [
        FunctionTool::new("add", "Adds two integers.", |p: Pair| async move {
            Ok::<_, String>(p.a + p.b)
        }),
        FunctionTool::new("mul", "Multiplies two integers.", |p: Pair| async move {
            Ok::<_, String>(p.a * p.b)
        }),
    ]
}

/// Everything a turn produced: the tool messages it keeps in the agent's
/// own thread (the default: the reply's private messages), then the
/// reply's messages.
fn produced(_given: &Thread, reply: &Reply) -> Vec<Message> {
    assert!(
        reply.thread().is_none(),
        "the given thread is never replaced"
    );
    let mut all: Vec<Message> = reply.private().to_vec();
    all.extend(reply.messages().iter().cloned());
    all
}

fn results_of(message: &Message) -> &[ToolResult] {
    match &message.content {
        Content::ToolResults(r) => r,
        other => panic!("expected tool results, got {other:?}"),
    }
}

#[tokio::test]
async fn a_three_step_tool_loop_feeds_each_result_back() {
    bounded(async {
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_call("add", json!({"a": 2, "b": 3})),
            ScriptedReply::tool_call("mul", json!({"a": 5, "b": 4})),
            ScriptedReply::tool_call("add", json!({"a": 20, "b": 1})),
            ScriptedReply::text("(2+3)*4+1 = 21"),
        ]));
        let agent = ChatAgent::builder("calc")
            .instructions("Compute step by step with the tools.")
            .model(model.clone())
            .tools(arithmetic())
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let thread = ask("(2+3)*4+1?");
        let reply = agent.run(thread.clone(), ctx).await.unwrap();

        // Others receive only the answer; the agent's own thread keeps the loop.
        assert_eq!(reply.messages().len(), 1);
        assert_eq!(reply.messages()[0].text_content(), "(2+3)*4+1 = 21");
        let turn = produced(&thread, &reply);
        assert_eq!(turn.len(), 7, "3 × (calls, results) + the answer");
        let results: Vec<&str> = turn[1..6]
            .iter()
            .step_by(2)
            .map(|m| results_of(m)[0].content.as_str())
            .collect();
        assert_eq!(results, ["5", "20", "21"]);
        assert!(turn.iter().all(|m| &*m.source == "calc"));
        assert!(
            turn[..6].iter().all(|m| m.usage.is_none()),
            "usage is counted once, on the answer"
        );

        // Each call saw the results before it (pattern 1, the feedback loop).
        let requests = model.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(
            requests[0].messages[0],
            ChatMessage::system("Compute step by step with the tools.")
        );
        let tool_messages = |r: &ChatRequest| {
            r.messages
                .iter()
                .filter_map(|m| match m {
                    ChatMessage::Tool { content, .. } => Some(content.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(tool_messages(&requests[1]), ["5"]);
        assert_eq!(tool_messages(&requests[3]), ["5", "20", "21"]);
        assert_eq!(requests[0].tools.len(), 2);
        assert_eq!(requests[0].tool_choice, Some(ToolChoice::Auto));

        let events = events.drain_ready();
        let calls = events
            .iter()
            .filter(|e| matches!(&e.event, Event::ToolCall { .. }))
            .count();
        let results = events
            .iter()
            .filter(|e| matches!(&e.event, Event::ToolResult { .. }))
            .count();
        assert_eq!((calls, results), (3, 3));

        // The usage of the four model calls, summed on the answer.
        let scripted_total: u64 = {
            let model = ScriptedModel::new([
                ScriptedReply::tool_call("add", json!({"a": 2, "b": 3})),
                ScriptedReply::tool_call("mul", json!({"a": 5, "b": 4})),
                ScriptedReply::tool_call("add", json!({"a": 20, "b": 1})),
                ScriptedReply::text("(2+3)*4+1 = 21"),
            ]);
            let agent = ChatAgent::builder("calc")
                .instructions("Compute step by step with the tools.")
                .model(model)
                .tools(arithmetic())
                .tool_messages(ToolMessages::Reply)
                .build()
                .unwrap();
            let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
            assert_eq!(
                reply.messages().len(),
                7,
                "in Reply mode the reply holds the whole turn"
            );
            assert!(reply.thread().is_none() && reply.private().is_empty());
            assert!(
                reply
                    .messages()
                    .iter()
                    .step_by(2)
                    .all(|m| m.usage.is_some()),
                "each model call's usage on its message"
            );
            reply
                .messages()
                .iter()
                .filter_map(|m| m.usage)
                .map(|u| u.total())
                .sum()
        };
        assert_eq!(
            reply.messages()[0].usage.map(|u| u.total()),
            Some(scripted_total)
        );
    })
    .await;
}

#[tokio::test]
async fn several_calls_in_one_answer_run_concurrently() {
    bounded(async {
        // Each call waits for the other: only concurrent calls finish.
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let meet = {
            let barrier = barrier.clone();
            FunctionTool::new("meet", "Waits for a partner.", move |p: Pair| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    Ok::<_, String>(p.a)
                }
            })
        };
        let model = ScriptedModel::new([
            ScriptedReply::tool_calls([
                ("meet", json!({"a": 1, "b": 0})),
                ("meet", json!({"a": 2, "b": 0})),
            ]),
            ScriptedReply::text("met"),
        ]);
        let agent = ChatAgent::builder("pair")
            .model(model)
            .tool(meet)
            .build()
            .unwrap();
        let thread = ask("meet");
        let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
        let turn = produced(&thread, &reply);
        let results = results_of(&turn[1]);
        assert_eq!(
            results
                .iter()
                .map(|r| r.content.as_str())
                .collect::<Vec<_>>(),
            ["1", "2"]
        );
        assert_ne!(results[0].call_id, results[1].call_id);
    })
    .await;
}

#[tokio::test]
async fn tool_failures_go_back_to_the_model() {
    bounded(async {
        let failing = FunctionTool::new("fail", "Always fails.", |_: Pair| async {
            Err::<String, _>("disk full")
        });
        let panicking = FunctionTool::new("panic", "Panics.", |_: Pair| async {
            if true {
                panic!("boom");
            }
            Ok::<String, String>(String::new())
        });
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::ToolCalls(vec![
                ("fail".into(), r#"{"a":1,"b":2}"#.into()),
                ("add".into(), r#"{"a":"one"}"#.into()),
                ("add".into(), "{broken".into()),
                ("nope".into(), "{}".into()),
                ("panic".into(), r#"{"a":1,"b":2}"#.into()),
            ]),
            ScriptedReply::text("sorry"),
        ]));
        let agent = ChatAgent::builder("clumsy")
            .model(model.clone())
            .tools(arithmetic())
            .tool(failing)
            .tool(panicking)
            .build()
            .unwrap();
        let thread = ask("try");
        let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
        let turn = produced(&thread, &reply);
        let results = results_of(&turn[1]);
        assert!(results.iter().all(|r| r.is_error));
        assert_eq!(results[0].content, "Error: disk full");
        assert!(
            results[1]
                .content
                .contains("invalid arguments for tool 'add'"),
            "{}",
            results[1].content
        );
        assert!(
            results[1].content.contains("invalid type"),
            "{}",
            results[1].content
        );
        assert!(
            results[2].content.contains("not valid JSON"),
            "{}",
            results[2].content
        );
        assert!(
            results[3]
                .content
                .contains("there is no tool 'nope'; the tools are: add, mul, fail, panic"),
            "{}",
            results[3].content
        );
        assert!(
            results[4].content.contains("panicked: boom"),
            "{}",
            results[4].content
        );
        assert_eq!(turn[2].text_content(), "sorry");
        let second = &model.requests()[1];
        assert!(
            second
                .messages
                .iter()
                .any(|m| m.text() == "Error: disk full")
        );
    })
    .await;
}

#[tokio::test]
async fn a_fatal_tool_error_ends_the_turn() {
    let fatal = FunctionTool::new("guard", "Refuses.", |_: Pair| async {
        Err::<String, _>(ToolError::Fatal("credentials revoked".into()))
    });
    let model = ScriptedModel::new([ScriptedReply::tool_call("guard", json!({"a": 1, "b": 1}))]);
    let agent = ChatAgent::builder("a")
        .model(model)
        .tool(fatal)
        .build()
        .unwrap();
    let e = bounded(agent.run(ask("go"), RunContext::new()))
        .await
        .unwrap_err();
    assert!(
        e.kind() == troupe_runtime::ErrorKind::Tool
            && e.message().starts_with("tool 'guard' failed"),
        "{e}"
    );
    assert!(e.to_string().contains("credentials revoked"));
}

#[tokio::test]
async fn tool_iterations_are_capped() {
    bounded(async {
        let call = || ScriptedReply::tool_call("add", json!({"a": 1, "b": 1}));
        // A model that obeys the last call's tool_choice "none".
        let obedient = Arc::new(ScriptedModel::new([
            call(),
            call(),
            ScriptedReply::text("done"),
        ]));
        let agent = ChatAgent::builder("looper")
            .model(obedient.clone())
            .tools(arithmetic())
            .max_tool_iterations(2)
            .build()
            .unwrap();
        let thread = ask("go");
        let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
        assert_eq!(produced(&thread, &reply).len(), 5);
        let choices: Vec<_> = obedient
            .requests()
            .iter()
            .map(|r| r.tool_choice.clone())
            .collect();
        assert_eq!(
            choices,
            [
                Some(ToolChoice::Auto),
                Some(ToolChoice::Auto),
                Some(ToolChoice::None)
            ]
        );

        // One that does not.
        let stubborn = ScriptedModel::new([call(), call(), call()]);
        let agent = ChatAgent::builder("looper")
            .model(stubborn)
            .tools(arithmetic())
            .max_tool_iterations(2)
            .build()
            .unwrap();
        let e = agent.run(ask("go"), RunContext::new()).await.unwrap_err();
        assert!(
            e.to_string()
                .contains("'looper' used all 2 tool iterations"),
            "{e}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_handoff_ends_the_turn_and_the_first_wins() {
    bounded(async {
        let model = Arc::new(ScriptedModel::new([ScriptedReply::ToolCalls(vec![
            (
                "transfer_to_billing".into(),
                r#"{"reason":"refund request"}"#.into(),
            ),
            ("add".into(), r#"{"a":1,"b":1}"#.into()),
            ("transfer_to_sales".into(), r#"{"reason":"upsell"}"#.into()),
        ])]));
        let agent = ChatAgent::builder("triage")
            .model(model.clone())
            .tools(arithmetic())
            .handoff_described("billing", "Handles refunds.")
            .handoff("sales")
            .build()
            .unwrap();
        let names: Vec<&str> = agent
            .tool_definitions()
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["add", "mul", "transfer_to_billing", "transfer_to_sales"]
        );
        assert!(
            agent.tool_definitions()[2]
                .description
                .contains("Handles refunds.")
        );

        let (ctx, mut events) = RunContext::stream();
        let thread = ask("I want my money back");
        let reply = agent.run(thread.clone(), ctx).await.unwrap();
        assert_eq!(reply.messages().len(), 1, "others receive just the handoff");
        let last = reply.messages().last().unwrap();
        assert_eq!(last.handoff_target(), Some("billing"));
        assert_eq!(last.text_content(), "refund request");
        let turn = produced(&thread, &reply);
        assert_eq!(turn.len(), 3);
        let results = results_of(&turn[1]);
        assert_eq!(results[0].content, "Transferred to billing.");
        assert_eq!(
            results[1].content, "2",
            "ordinary calls of the answer still run"
        );
        assert!(results[2].is_error && results[2].content.contains("not transferred to sales"));
        assert_eq!(model.requests().len(), 1, "no model call after the handoff");
        let handoffs: Vec<String> = events
            .drain_ready()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Handoff { to, .. } => Some(to),
                _ => None,
            })
            .collect();
        // The workflow that routes the handoff message reports it, once; an
        // agent run on its own reports none.
        assert!(handoffs.is_empty(), "{handoffs:?}");
    })
    .await;
}

#[tokio::test]
async fn a_handoff_inside_a_workflow_reaches_the_target() {
    bounded(async {
        let triage = ChatAgent::builder("triage")
            .model(ScriptedModel::new([ScriptedReply::handoff(
                "billing",
                "customer wants a refund",
            )]))
            .handoff("billing")
            .build()
            .unwrap();
        let billing_model = Arc::new(ScriptedModel::new([ScriptedReply::text("Refund issued.")]));
        let billing = ChatAgent::builder("billing")
            .model(billing_model.clone())
            .build()
            .unwrap();
        let workflow = Workflow::builder()
            .name("desk")
            .participant(triage)
            .participant(billing)
            .router(
                Router::builder()
                    .add_route("user", "triage")
                    .add_route("triage", "billing")
                    .output("billing"),
            )
            .build()
            .unwrap();
        let result = workflow
            .run_task("refund please", &RunContext::new())
            .await
            .unwrap();
        assert_eq!(result.final_text(), "Refund issued.");
        let triage_thread = result.thread.child("triage").unwrap();
        assert!(
            triage_thread
                .messages()
                .iter()
                .any(|m| matches!(m.content, Content::ToolResults(_)))
        );
        // Billing saw the handoff only: the user's request was routed to
        // triage alone, and triage's tool internals stay in triage's thread.
        let seen = &billing_model.requests()[0].messages;
        assert_eq!(
            seen,
            &vec![ChatMessage::User {
                content: "[triage hands off to billing] customer wants a refund".into(),
                name: Some("triage".into())
            }]
        );
    })
    .await;
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Verdict {
    /// Whether the claim holds.
    valid: bool,
    /// Why.
    reason: String,
}

#[tokio::test]
async fn structured_output_is_validated() {
    bounded(async {
        let schema = json!({
            "type": "object",
            "properties": {"valid": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["valid", "reason"],
            "additionalProperties": false
        });
        let model = Arc::new(ScriptedModel::new([ScriptedReply::structured(
            json!({"valid": true, "reason": "checked"}),
        )]));
        let agent = ChatAgent::builder("judge")
            .model(model.clone())
            .structured_output(schema.clone())
            .build()
            .unwrap();
        let reply = agent
            .run(ask("is 2+2=4?"), RunContext::new())
            .await
            .unwrap();
        assert_eq!(
            reply.messages()[0].content,
            Content::Structured(r#"{"reason":"checked","valid":true}"#.into())
                .clone()
                .pipe_normalised()
        );
        match &model.requests()[0].response_format {
            Some(ResponseFormat::JsonSchema {
                schema: s, strict, ..
            }) => {
                assert_eq!(s, &schema);
                assert!(*strict);
            }
            other => panic!("{other:?}"),
        }

        // A wrong answer is sent back with what is wrong; a right one follows.
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::text("It is valid!"),
            ScriptedReply::text("```json\n{\"valid\": true, \"reason\": \"arithmetic\"}\n```"),
        ]));
        let agent = ChatAgent::builder("judge")
            .model(model.clone())
            .structured_output_of::<Verdict>()
            .build()
            .unwrap();
        let reply = agent
            .run(ask("is 2+2=4?"), RunContext::new())
            .await
            .unwrap();
        assert_eq!(
            reply.messages().len(),
            1,
            "the correction is not part of the conversation"
        );
        assert!(
            matches!(&reply.messages()[0].content, Content::Structured(j) if j.contains("arithmetic"))
        );
        let retry = &model.requests()[1].messages;
        assert_eq!(
            retry[retry.len() - 2],
            ChatMessage::assistant("It is valid!")
        );
        assert!(
            retry.last().unwrap().text().contains("not JSON"),
            "{:?}",
            retry.last()
        );

        // Wrong twice: a clear error.
        let model = ScriptedModel::new([
            ScriptedReply::structured(json!({"valid": "yes"})),
            ScriptedReply::structured(json!({"valid": "still yes"})),
        ]);
        let agent = ChatAgent::builder("judge")
            .model(model)
            .structured_output_of::<Verdict>()
            .build()
            .unwrap();
        let e = agent.run(ask("?"), RunContext::new()).await.unwrap_err();
        let text = e.to_string();
        assert_eq!(e.kind(), troupe_runtime::ErrorKind::Model, "{e:?}");
        assert!(
            text.contains("'judge' gave no valid structured output"),
            "{text}"
        );
        assert!(
            text.contains("$.valid: \"still yes\" is not of type \"boolean\""),
            "{text}"
        );
        assert!(
            text.contains("$: \"reason\" is a required property"),
            "{text}"
        );
    })
    .await;
}

trait Normalised {
    fn pipe_normalised(self) -> Content;
}
impl Normalised for Content {
    /// Structured output is compact JSON with keys as serde_json orders them.
    fn pipe_normalised(self) -> Content {
        match self {
            Content::Structured(j) => Content::Structured(
                serde_json::from_str::<serde_json::Value>(&j)
                    .unwrap()
                    .to_string(),
            ),
            other => other,
        }
    }
}

/// A callee that reports what it saw.
fn witness(seen: Arc<Mutex<Vec<String>>>) -> FnAgent {
    FnAgent::sync("witness", move |t: &Thread| {
        let texts: Vec<String> = t
            .messages()
            .iter()
            .map(|m| format!("{}: {}", m.source, m.text_content()))
            .collect();
        seen.lock().unwrap().extend(texts);
        Ok(format!("saw {} messages", t.len()))
    })
    .with_description("Says what it sees.")
}

#[tokio::test]
async fn an_agent_as_tool_shares_the_callers_thread_when_told() {
    bounded(async {
        for (mode, expected) in [
            (
                ThreadMode::Shared,
                vec![
                    "user: earlier question",
                    "caller: earlier answer",
                    "user: now check",
                    "caller: witness({\"request\":\"look\"})",
                    "user: look",
                ],
            ),
            (ThreadMode::Fresh, vec!["user: look"]),
        ] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let model = ScriptedModel::new([
                ScriptedReply::tool_call("witness", json!({"request": "look"})),
                ScriptedReply::text("ok"),
            ]);
            let caller = ChatAgent::builder("caller")
                .model(model)
                .agent_tool(witness(seen.clone()), mode)
                .build()
                .unwrap();
            assert_eq!(
                caller.tool_definitions()[0].description,
                "Says what it sees."
            );
            let thread = Arc::new(Thread::from_messages([
                Message::user("earlier question"),
                Message::text("caller", "earlier answer"),
                Message::user("now check"),
            ]));
            let reply = caller.run(thread.clone(), RunContext::new()).await.unwrap();
            assert_eq!(*seen.lock().unwrap(), expected, "{mode:?}");
            assert_eq!(
                results_of(&produced(&thread, &reply)[1])[0].content,
                format!("saw {} messages", expected.len())
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_workflow_as_a_tool() {
    bounded(async {
        let upper = FnAgent::sync("upper", |t: &Thread| {
            Ok(t.last()
                .map(|m| m.text_content().to_uppercase())
                .unwrap_or_default())
        });
        let exclaim = FnAgent::sync("exclaim", |t: &Thread| {
            Ok(format!(
                "{}!",
                t.last()
                    .map(|m| m.text_content().into_owned())
                    .unwrap_or_default()
            ))
        });
        let shouter = Workflow::builder()
            .name("shouter")
            .description("Shouts the request.")
            .participant(upper)
            .participant(exclaim)
            .router(
                Router::builder()
                    .add_route("user", "upper")
                    .add_route("upper", "exclaim")
                    .output("exclaim"),
            )
            .build()
            .unwrap();
        let failing = FnAgent::sync("broken", |_: &Thread| -> Result<Reply, AgentError> {
            Err(AgentError::failed("out of order"))
        });
        let model = ScriptedModel::new([
            ScriptedReply::tool_calls([
                ("shouter", json!({"request": "hello"})),
                ("broken", json!({"request": "x"})),
            ]),
            ScriptedReply::text("done"),
        ]);
        let agent = ChatAgent::builder("boss")
            .model(model)
            .tool(AgentTool::new(shouter))
            .tool(AgentTool::new(failing))
            .build()
            .unwrap();
        let thread = ask("shout hello");
        let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
        let turn = produced(&thread, &reply);
        let results = results_of(&turn[1]);
        assert_eq!(results[0].content, "HELLO!");
        assert!(
            results[1].is_error
                && results[1]
                    .content
                    .contains("agent 'broken' failed: out of order"),
            "{}",
            results[1].content
        );
    })
    .await;
}

#[tokio::test]
async fn trimmed_results_leave_their_memory() {
    bounded(async {
        let reader = FunctionTool::new("read", "Reads a page.", |p: Pair| async move {
            Ok::<_, String>(
                ToolOutput::text(format!("RAW PAGE {} {}", p.a, "lorem ipsum ".repeat(50)))
                    .with_memory(format!("page {} mentions topic {}", p.a, p.b)),
            )
        });
        let model = Arc::new(ScriptedModel::new([
            ScriptedReply::tool_call("read", json!({"a": 1, "b": 7})),
            ScriptedReply::tool_call("read", json!({"a": 2, "b": 9})),
            ScriptedReply::text("summary"),
        ]));
        let agent = ChatAgent::builder("reader")
            .instructions("Read, then summarise.")
            .model(model.clone())
            .tool(reader)
            .context(ContextPolicy::LastN(2))
            .build()
            .unwrap();
        let thread = ask("summarise pages 1 and 2");
        let reply = agent.run(thread.clone(), RunContext::new()).await.unwrap();
        assert_eq!(
            results_of(&produced(&thread, &reply)[1])[0]
                .memory
                .as_deref(),
            Some("page 1 mentions topic 7")
        );

        let last = &model.requests()[2];
        let system = last.messages[0].text();
        assert!(system.starts_with("Read, then summarise."), "{system}");
        assert!(
            system.contains("- read: page 1 mentions topic 7"),
            "{system}"
        );
        assert!(
            !system.contains("page 2 mentions"),
            "page 2's raw result is still shown: {system}"
        );
        let shown: String = last.messages.iter().map(|m| m.text()).collect();
        assert!(!shown.contains("RAW PAGE 1") && shown.contains("RAW PAGE 2"));
        assert_eq!(
            last.messages.len(),
            3,
            "system, page 2's call and its result: {:?}",
            last.messages
        );
    })
    .await;
}

/// A model that never answers.
struct Stuck;

#[async_trait]
impl ChatModel for Stuck {
    fn model_name(&self) -> &str {
        "stuck"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn cancellation_stops_the_loop_promptly() {
    bounded(async {
        let agent = ChatAgent::builder("waiter").model(Stuck).build().unwrap();
        let ctx = RunContext::new();
        let canceller = ctx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            canceller.cancel();
        });
        let e = agent.run(ask("hi"), ctx).await.unwrap_err();
        assert_eq!(e.kind(), troupe_runtime::ErrorKind::Cancelled, "{e}");

        // Cancelled while a tool runs.
        let started = Arc::new(AtomicUsize::new(0));
        let sleeper = {
            let started = started.clone();
            FunctionTool::new("sleep", "Sleeps.", move |_: Pair| {
                started.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<_, String>("rested")
                }
            })
        };
        let agent = ChatAgent::builder("sleepy")
            .model(ScriptedModel::new([ScriptedReply::tool_call(
                "sleep",
                json!({"a": 0, "b": 0}),
            )]))
            .tool(sleeper)
            .build()
            .unwrap();
        let ctx = RunContext::new();
        let canceller = ctx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            canceller.cancel();
        });
        assert!(agent.run(ask("nap"), ctx).await.is_err());
        assert_eq!(started.load(Ordering::SeqCst), 1);
    })
    .await;
}

#[tokio::test]
async fn slow_tools_time_out_and_an_exhausted_script_says_so() {
    bounded(async {
        let slow = FunctionTool::new("slow", "Slow.", |_: Pair| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, String>("late")
        });
        let agent = ChatAgent::builder("impatient")
            .model(
                ScriptedModel::new([ScriptedReply::tool_call("slow", json!({"a": 0, "b": 0}))])
                    .named("script-1"),
            )
            .tool(slow)
            .tool_timeout(Duration::from_millis(20))
            .build()
            .unwrap();
        let e = agent.run(ask("go"), RunContext::new()).await.unwrap_err();
        // The timeout went back to the model; the model then ran out of script.
        let text = e.to_string();
        assert!(
            text.contains("scripted model 'script-1' is exhausted: call 2"),
            "{text}"
        );
        assert_eq!(e.kind(), troupe_runtime::ErrorKind::Model);
    })
    .await;
}

#[tokio::test]
async fn build_errors_are_clear() {
    let e = ChatAgent::builder("x").build().unwrap_err();
    assert_eq!(e.to_string(), "chat agent 'x' has no model");
    let model = || ScriptedModel::new([]);
    let e = ChatAgent::builder("x")
        .model(model())
        .tools(arithmetic())
        .tools(arithmetic())
        .build()
        .unwrap_err();
    assert_eq!(e.to_string(), "chat agent 'x' has two tools named 'add'");
    let e = ChatAgent::builder("x")
        .model(model())
        .handoff("x")
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("itself"), "{e}");
    let bad = FunctionTool::with_schema("bad name", "", json!({"type": "object"}), |_, _| async {
        Ok::<_, String>("")
    });
    let e = ChatAgent::builder("x")
        .model(model())
        .tool(bad)
        .build()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("'bad name' is not a valid tool name"),
        "{e}"
    );
    let e = ChatAgent::builder("x")
        .model(model())
        .structured_output(json!({"$ref": "other.json"}))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("structured output schema"), "{e}");
}

#[tokio::test]
async fn scripted_from_a_function_of_the_conversation() {
    let model = ScriptedModel::from_fn(|request| {
        let last = request
            .messages
            .last()
            .map(|m| m.text().to_string())
            .unwrap_or_default();
        match request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }))
        {
            false => Ok(ScriptedReply::tool_call(
                "add",
                json!({"a": last.len(), "b": 1}),
            )),
            true => Ok(ScriptedReply::text(format!("length+1 = {last}"))),
        }
    });
    let agent = ChatAgent::builder("f")
        .model(model)
        .tools(arithmetic())
        .build()
        .unwrap();
    let reply = bounded(agent.run(ask("four"), RunContext::new()))
        .await
        .unwrap();
    assert_eq!(
        reply.messages().last().unwrap().text_content(),
        "length+1 = 5"
    );
}

#[test]
fn tool_call_type_is_shared_with_the_runtime() {
    // ScriptedReply ids are deterministic: call_<n>_<i>.
    let call = ToolCall {
        id: "call_1_0".into(),
        name: "x".into(),
        arguments: "{}".into(),
    };
    assert_eq!(call.id, "call_1_0");
}

#[test]
fn a_chat_agent_declares_its_handoffs() {
    let agent = ChatAgent::builder("triage")
        .model(ScriptedModel::new([]))
        .handoff("billing")
        .handoff("user")
        .build()
        .unwrap();
    assert_eq!(Agent::handoffs(&agent), ["billing", "user"]);
}
