//! Recorded wire-format fixtures (`tests/fixtures/<provider>/…`) replayed
//! by the fake server: JSON bodies with a status and headers, and SSE
//! bodies sent one event per write, as a real server flushes them; and
//! the helpers the provider tests share.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatDelta, ChatMessage, ChatModel, ChatRequest, ChatStream, FunctionTool, ModelError,
};
use troupe_runtime::{Agent, AgentError, Content, Message, RunContext, Thread};

use crate::fake_server::{Answer, Piece};

/// The text of fixture `provider/name` (found from troupe-agents' tests
/// and from other crates' alike: both sit beside `agents/`).
pub fn fixture(provider: &str, name: &str) -> String {
    let path = format!(
        "{}/../agents/tests/fixtures/{provider}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A JSON fixture answered with `status` and these headers.
pub fn json(provider: &str, name: &str, status: u16, headers: &[(&'static str, &str)]) -> Answer {
    let mut all = vec![("content-type", "application/json".to_string())];
    all.extend(headers.iter().map(|(n, v)| (*n, v.to_string())));
    Answer::Whole {
        status,
        headers: all,
        body: fixture(provider, name),
    }
}

/// An SSE fixture, one event per write.
pub fn sse(provider: &str, name: &str) -> Answer {
    let text = fixture(provider, name);
    let pieces = text
        .split_inclusive("\n\n")
        .map(|event| Piece::Raw(event.to_string()))
        .collect();
    Answer::Stream {
        pieces,
        gap: Duration::from_millis(1),
    }
}

/// Every test is bounded: a hang is a failure, not a stuck suite.
pub async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the test hung")
}

/// A request with brief instructions and this user text.
pub fn ask(text: &str) -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("be brief"),
        ChatMessage::user(text),
    ])
}

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    q: String,
}

/// A streaming agent on `model` with a `lookup` tool answering
/// `<q> = a Rust runtime`.
pub fn researcher(model: impl ChatModel) -> ChatAgent {
    ChatAgent::builder("researcher")
        .instructions("Use lookup.")
        .model(model)
        .tool(FunctionTool::new(
            "lookup",
            "Looks a word up.",
            |l: Lookup| async move { Ok::<_, String>(format!("{} = a Rust runtime", l.q)) },
        ))
        .streaming(true)
        .build()
        .unwrap()
}

/// What `agent` answers to "What is troupe?", after checking that its
/// tool's result stayed in its own thread.
pub async fn ask_researcher(agent: &ChatAgent) -> troupe_runtime::Message {
    let thread = Arc::new(Thread::from_messages([Message::user("What is troupe?")]));
    let reply = agent.run(thread, RunContext::new()).await.unwrap();
    assert!(
        matches!(&reply.private()[1].content, Content::ToolResults(r) if r[0].content.contains("Rust runtime"))
    );
    assert_eq!(reply.messages().len(), 1);
    reply.into_messages().remove(0)
}

/// Checks a model's errors against a server scripted with three transient
/// failures and then a 400: the first call gives up after three attempts,
/// naming `retried`, and is transient for an agent; the second fails at
/// once, naming each of `refused`, and is not.
pub async fn check_error_bodies(model: &impl ChatModel, retried: &str, refused: &[&str]) {
    let e = model.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::RetriesExhausted { attempts: 3, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains(retried), "{e}");
    assert_eq!(
        AgentError::from(e).kind(),
        troupe_runtime::ErrorKind::Transient
    );
    let e = model.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(e, ModelError::Status { status: 400, .. }),
        "400 is not retried: {e:?}"
    );
    let text = e.to_string();
    for part in refused {
        assert!(text.contains(part), "{text}");
    }
    assert_eq!(AgentError::from(e).kind(), troupe_runtime::ErrorKind::Model);
}

/// Every delta of a stream, in order (an error fails the test).
pub async fn drain(mut stream: ChatStream) -> Vec<ChatDelta> {
    let mut deltas = Vec::new();
    while let Some(d) = futures::StreamExt::next(&mut stream).await {
        deltas.push(d.unwrap());
    }
    deltas
}

/// The text pieces among deltas.
pub fn texts(deltas: &[ChatDelta]) -> Vec<&str> {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}
