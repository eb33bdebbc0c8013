//! Token streaming through every level: a workflow running a workflow as
//! its agent, whose chat agent calls another agent as a tool, all against
//! the fake server's real SSE wire format. The deltas reach the top-level
//! stream live, in order, with the path of the agent that speaks; model
//! calls and their retries are events too.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use troupe_agents::{AgentTool, ChatAgent, ModelRetryPolicy, OpenAiClient};
use troupe_runtime::{Event, Message, RunContext, Thread, Workflow, event::EventRecord};

use super::bounded;
use super::fake_server::{Answer, FakeOpenAi, Piece};

const WRITER: &str = "outer/inner/writer";
const RESEARCHER: &str = "outer/inner/writer/researcher";

fn client(server: &FakeOpenAi) -> OpenAiClient {
    OpenAiClient::builder("fake-model")
        .base_url(&server.base_url)
        .timeout(Duration::from_secs(5))
        .retry(ModelRetryPolicy::new(3, Duration::from_millis(1)).with_jitter(false))
        .build()
        .unwrap()
}

fn chunk(delta: Value, finish: Value) -> String {
    let c = json!({"id": "s", "object": "chat.completion.chunk", "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn text(piece: &str) -> Piece {
    Piece::Raw(chunk(json!({"content": piece}), Value::Null))
}

fn done() -> Vec<Piece> {
    vec![
        Piece::Raw(chunk(json!({}), json!("stop"))),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]
}

fn stream(pieces: Vec<Piece>) -> Answer {
    Answer::Stream {
        pieces,
        gap: Duration::from_millis(1),
    }
}

/// outer (workflow) → inner (workflow as agent) → writer (chat agent),
/// which calls researcher (a chat agent) as a tool.
fn team(server: &FakeOpenAi) -> Workflow {
    let researcher = ChatAgent::builder("researcher")
        .description("Finds facts.")
        .model(client(server))
        .build()
        .unwrap();
    let writer = ChatAgent::builder("writer")
        .model(client(server))
        .tool(AgentTool::new(researcher))
        .build()
        .unwrap();
    let inner = Workflow::builder()
        .name("inner")
        .participant(writer)
        .build()
        .unwrap();
    Workflow::builder()
        .name("outer")
        .participant(inner)
        .build()
        .unwrap()
}

fn joined(events: &[EventRecord], at: &str) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TextDelta { path, text } if &**path == at => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn position(events: &[EventRecord], what: impl Fn(&Event) -> bool) -> usize {
    events
        .iter()
        .position(|e| what(&e.event))
        .expect("the event is there")
}

#[tokio::test]
async fn deltas_from_three_levels_and_a_tool_agent_reach_the_top_live() {
    bounded(async {
        let gate = Arc::new(tokio::sync::Notify::new());
        let server = FakeOpenAi::start([
            // The writer asks the researcher, its arguments in pieces.
            stream(vec![
                Piece::Raw(chunk(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"index": 0, "id": "call_r", "type": "function", "function": {"name": "researcher", "arguments": ""}}
                ]}), Value::Null)),
                Piece::Raw(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"request\":"}}]}), Value::Null)),
                Piece::Raw(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"facts\"}"}}]}), Value::Null)),
                Piece::Raw(chunk(json!({}), json!("tool_calls"))),
                Piece::Raw("data: [DONE]\n\n".into()),
            ]),
            // The researcher answers, with no usage chunk.
            stream([vec![text("Rust "), text("is "), text("fast.")], done()].concat()),
            // The writer answers; the rest waits until the test saw the
            // first piece at the top.
            stream(
                [
                    vec![text("Rust, "), Piece::Gate(gate.clone()), text("they say, "), text("is fast.")],
                    vec![
                        Piece::Raw(chunk(json!({}), json!("stop"))),
                        Piece::Raw(format!(
                            "data: {}\n\n",
                            json!({"id": "s", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 6}})
                        )),
                        Piece::Raw("data: [DONE]\n\n".into()),
                    ],
                ]
                .concat(),
            ),
        ])
        .await;
        let outer = team(&server);
        let mut run = outer.run_stream(
            Thread::from_messages([Message::user("Is Rust fast?")]),
            &RunContext::new(),
        );
        let mut events = Vec::new();
        while let Some(record) = run.next().await {
            let first_writer_piece =
                matches!(&record.event, Event::TextDelta { path, .. } if &**path == WRITER);
            events.push(record);
            if first_writer_piece && joined(&events, WRITER) == "Rust, " {
                // Live: the writer's model is still answering.
                assert!(
                    !events.iter().any(|e| matches!(&e.event,
                        Event::AgentFinished { path, .. } | Event::MessageProduced { path, .. }
                            if &**path == WRITER || &**path == "outer/inner")),
                    "the writer's turn ended before its first piece arrived"
                );
                gate.notify_one();
            }
        }
        let result = run.result().await.unwrap();

        // The concatenation of each agent's pieces is its answer.
        assert_eq!(result.final_text(), "Rust, they say, is fast.");
        assert_eq!(joined(&events, WRITER), result.final_text());
        assert_eq!(joined(&events, RESEARCHER), "Rust is fast.");
        let tool_result = events
            .iter()
            .find_map(|e| match &e.event {
                Event::ToolResult { path, result } if &**path == WRITER => Some(result.content.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(tool_result, "Rust is fast.");
        // In order, one piece per chunk.
        let pieces: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::TextDelta { path, text } if &**path == WRITER => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(pieces, ["Rust, ", "they say, ", "is fast."]);
        // The tool call's arguments streamed too, tagged with the call.
        let arguments: Vec<(usize, Option<&str>, &str)> = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolArgumentsDelta { path, index, name, arguments, .. } if &**path == WRITER => {
                    Some((*index, name.as_deref(), arguments.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(arguments[0], (0, Some("researcher"), ""));
        let whole: String = arguments.iter().map(|a| a.2).collect();
        assert_eq!(whole, "{\"request\":\"facts\"}");

        // Every piece came before its agent's turn ended.
        let last_writer_piece = events
            .iter()
            .rposition(|e| matches!(&e.event, Event::TextDelta { path, .. } if &**path == WRITER))
            .unwrap();
        let writer_done = position(&events, |e| {
            matches!(e, Event::MessageProduced { path, .. } if &**path == WRITER)
        });
        assert!(last_writer_piece < writer_done);
        let last_researcher_piece = events
            .iter()
            .rposition(|e| matches!(&e.event, Event::TextDelta { path, .. } if &**path == RESEARCHER))
            .unwrap();
        let researcher_done = position(&events, |e| {
            matches!(e, Event::ToolResult { path, .. } if &**path == WRITER)
        });
        assert!(last_researcher_piece < researcher_done);
        // Every record belongs to the one run, numbered in order of emission.
        let mut seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), events.len(), "sequence numbers are unique");

        // Model calls: three, each started and finished; the researcher's
        // usage is an estimate (no usage chunk), the writer's last is not.
        let finished: Vec<(&str, bool, Option<u64>)> = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ModelCallFinished { path, usage, usage_estimated, error: None, attempt: 1, model, .. } => {
                    assert_eq!(model, "fake-model");
                    Some((&**path, *usage_estimated, usage.map(|u| u.total())))
                }
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 3, "{finished:?}");
        assert_eq!(finished[1].0, RESEARCHER);
        assert!(finished[1].1, "no usage chunk: estimated");
        assert!(finished[1].2.unwrap() > 0);
        assert_eq!(finished[2], (WRITER, false, Some(46)));
        let started = events
            .iter()
            .filter(|e| matches!(&e.event, Event::ModelCallStarted { attempt: 1, .. }))
            .count();
        assert_eq!(started, 3);
        // Every request asked for a stream (somebody listened), with usage.
        for request in server.requests() {
            assert_eq!(request.body["stream"], true);
            assert_eq!(request.body["stream_options"]["include_usage"], true);
        }
    })
    .await;
}

#[tokio::test]
async fn retries_are_events_as_they_happen() {
    bounded(async {
        let server = FakeOpenAi::start([
            Answer::Whole {
                status: 503,
                headers: vec![("retry-after-ms", "5".into())],
                body: "overloaded".into(),
            },
            stream([vec![text("ok")], done()].concat()),
        ])
        .await;
        let agent = ChatAgent::builder("solo")
            .model(client(&server))
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let ctx = ctx.child("solo");
        let thread = Arc::new(Thread::from_messages([Message::user("hi")]));
        let reply = troupe_runtime::Agent::run(&agent, thread, ctx)
            .await
            .unwrap();
        assert_eq!(reply.messages()[0].text_content(), "ok");
        let kinds: Vec<String> = events
            .drain_ready()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::ModelCallStarted { attempt, .. } => Some(format!("start {attempt}")),
                Event::ModelCallRetry {
                    attempt,
                    error,
                    delay_ms,
                    ..
                } => {
                    assert!(error.contains("503"), "{error}");
                    assert!((delay_ms - 5.0).abs() < 0.5, "{delay_ms}");
                    Some(format!("retry {attempt}"))
                }
                Event::TextDelta { text, .. } => Some(format!("text {text}")),
                Event::ModelCallFinished {
                    attempt,
                    error: None,
                    ..
                } => Some(format!("end {attempt}")),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["start 1", "retry 1", "start 2", "text ok", "end 2"]);
    })
    .await;
}

#[tokio::test]
async fn nobody_listening_means_no_stream_unless_asked() {
    bounded(async {
        let whole = || {
            Answer::json(
                json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}),
            )
        };
        let server = FakeOpenAi::start([whole(), whole(), whole()]).await;
        let thread = || Arc::new(Thread::from_messages([Message::user("hi")]));
        let quiet = ChatAgent::builder("a")
            .model(client(&server))
            .build()
            .unwrap();
        troupe_runtime::Agent::run(&quiet, thread(), RunContext::new())
            .await
            .unwrap();
        let asked = ChatAgent::builder("b")
            .model(client(&server))
            .streaming(true)
            .build()
            .unwrap();
        troupe_runtime::Agent::run(&asked, thread(), RunContext::new())
            .await
            .unwrap();
        // Listening, but told not to stream: the answer comes whole, and
        // the call is still reported, its usage estimated.
        let whole_only = ChatAgent::builder("c")
            .model(client(&server))
            .streaming(false)
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let reply = troupe_runtime::Agent::run(&whole_only, thread(), ctx)
            .await
            .unwrap();
        assert!(reply.messages()[0].usage.is_some_and(|u| u.total() > 0));
        let seen = events.drain_ready();
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e.event, Event::TextDelta { .. }))
        );
        assert!(seen.iter().any(|e| matches!(
            e.event,
            Event::ModelCallFinished {
                usage_estimated: true,
                ..
            }
        )));

        let streamed: Vec<bool> = server
            .requests()
            .iter()
            .map(|r| r.body.get("stream").is_some())
            .collect();
        assert_eq!(streamed, [false, true, false]);
    })
    .await;
}

#[tokio::test]
async fn a_session_turn_streams_its_answer() {
    bounded(async {
        let server = FakeOpenAi::start([stream(
            [vec![text("Hello"), text(", "), text("Alice.")], done()].concat(),
        )])
        .await;
        let bot = ChatAgent::builder("bot")
            .model(client(&server))
            .build()
            .unwrap();
        let team = Workflow::builder()
            .name("desk")
            .participant(bot)
            .build()
            .unwrap();
        let session = troupe_runtime::Session::new(team, troupe_runtime::store::MemoryStore::new());
        let mut turn = session.send_stream("alice", "Hi, I am Alice");
        let mut pieces = Vec::new();
        let mut answered_after_pieces = false;
        while let Some(record) = turn.next().await {
            assert_eq!(&*record.run_id, "alice", "the conversation names the run");
            match &record.event {
                Event::TextDelta { path, text } => {
                    assert_eq!(&**path, "desk/bot");
                    pieces.push(text.clone());
                }
                Event::MessageProduced { path, .. } if &**path == "desk/bot" => {
                    answered_after_pieces = pieces.len() == 3;
                }
                _ => {}
            }
        }
        let result = turn.result().await.unwrap();
        assert_eq!(pieces.concat(), result.final_text());
        assert!(answered_after_pieces, "{pieces:?}");
        assert_eq!(
            session.history("alice").await.unwrap().len(),
            2,
            "the turn was saved"
        );
    })
    .await;
}
