//! Errors keep their sources: a model client's error survives a ChatAgent's
//! turn, `Retry-After` and all, and schema and user-proxy errors are typed.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe_agents::{
    ChatAgent, ChatAgentBuildError, ChatModel, ChatRequest, ChatResponse, ModelError, SchemaError,
    StructuredOutput, UserProxy, async_trait,
};
use troupe_runtime::{
    Agent, AgentError, ErrorKind, Message, RunContext, RunError, Thread, Workflow,
};

/// A model the server rate-limits, asking for a seven-second wait.
struct RateLimited;

fn rate_limited() -> ModelError {
    ModelError::Status {
        endpoint: "https://api.example/v1/chat/completions".into(),
        status: 429,
        body: "slow down".into(),
        retry_after: Some(Duration::from_secs(7)),
    }
}

#[async_trait]
impl ChatModel for RateLimited {
    fn model_name(&self) -> &str {
        "limited"
    }

    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(rate_limited())
    }
}

fn ask(text: &str) -> Arc<Thread> {
    Arc::new(Thread::from_messages([Message::user(text)]))
}

fn assert_keeps_the_model_error(e: &AgentError) {
    assert_eq!(e.kind(), ErrorKind::Transient, "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("transient failure: model call failed: "),
        "{text}"
    );
    assert!(text.contains("HTTP 429"), "{text}");
    let direct = e.source().and_then(|s| s.downcast_ref::<ModelError>());
    assert!(
        direct.is_some(),
        "the source is the ModelError itself: {e:?}"
    );
    let cause = e.downcast_source::<ModelError>();
    assert!(
        matches!(cause, Some(ModelError::Status { status: 429, .. })),
        "{e:?}"
    );
    assert_eq!(
        cause.and_then(ModelError::retry_after),
        Some(Duration::from_secs(7))
    );
}

#[tokio::test]
async fn a_rate_limit_comes_back_from_a_chat_agent_with_its_retry_after() {
    for streaming in [false, true] {
        let agent = ChatAgent::builder("writer")
            .model(RateLimited)
            .streaming(streaming)
            .build()
            .unwrap();
        let e = agent.run(ask("go"), RunContext::new()).await.unwrap_err();
        assert_keeps_the_model_error(&e);
    }
}

#[tokio::test]
async fn a_failed_run_keeps_the_whole_chain_of_causes() {
    let agent = ChatAgent::builder("writer")
        .model(RateLimited)
        .build()
        .unwrap();
    let workflow = Workflow::builder().participant(agent).build().unwrap();
    let e = workflow
        .run_task("go", &RunContext::new())
        .await
        .unwrap_err();
    match e {
        RunError::AgentFailed { source, .. } => assert_keeps_the_model_error(&source),
        other => panic!("expected the agent's failure, got {other}"),
    }
}

#[test]
fn an_exhausted_retry_tells_the_last_retry_after() {
    let e = ModelError::RetriesExhausted {
        endpoint: "https://api.example".into(),
        attempts: 3,
        last: Box::new(rate_limited()),
    };
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    let agent_error = AgentError::from(e);
    assert_eq!(agent_error.kind(), ErrorKind::Transient);
    assert!(matches!(
        agent_error.downcast_source::<ModelError>(),
        Some(ModelError::RetriesExhausted { attempts: 3, .. })
    ));
}

#[test]
fn schema_problems_are_typed_and_kept_by_the_build_error() {
    let e = StructuredOutput::new(json!({"$ref": "#/$defs/missing"})).unwrap_err();
    assert!(
        matches!(&e, SchemaError::UnresolvedRef { reference, .. } if reference == "#/$defs/missing"),
        "{e}"
    );
    assert!(matches!(
        StructuredOutput::new(json!("a string")),
        Err(SchemaError::NotASchema(_))
    ));

    let e = ChatAgent::builder("judge")
        .model(RateLimited)
        .structured_output(json!({"$ref": "http://elsewhere/schema"}))
        .build()
        .unwrap_err();
    assert!(matches!(e, ChatAgentBuildError::InvalidSchema { .. }));
    let source = e.source().and_then(|s| s.downcast_ref::<SchemaError>());
    assert!(
        matches!(source, Some(SchemaError::UnresolvedRef { reference, .. }) if reference == "http://elsewhere/schema"),
        "{e}"
    );
}

#[tokio::test]
async fn an_answer_nobody_waits_for_comes_back() {
    let (proxy, mut handle) = UserProxy::channel("human");
    let ctx = RunContext::new();
    let turn = tokio::spawn({
        let ctx = ctx.clone();
        async move { proxy.run(ask("your name?"), ctx).await }
    });
    let request = handle.next().await.unwrap();
    ctx.cancel();
    assert!(turn.await.unwrap().is_err(), "the turn was cancelled");
    let e = request.respond("Ada").unwrap_err();
    assert_eq!(e.answer(), "Ada");
    assert_eq!(e.into_answer(), "Ada");
}
