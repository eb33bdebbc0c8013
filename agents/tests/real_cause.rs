//! A turn that fails after the model was asked again ends with what was
//! wrong with its answer, not only with the failure of the call that
//! asked again: a structured answer that fails its schema, a handoff the
//! agent was not given. (Offline, a scripted model's script then runs out;
//! that alone used to be the turn's error.)

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::json;
use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_runtime::{Agent, ErrorKind, Message, RunContext, Thread};

fn ask(text: &str) -> Arc<Thread> {
    Arc::new(Thread::from_messages([Message::user(text)]))
}

#[tokio::test]
async fn a_structured_answer_that_fails_its_schema_is_the_cause() {
    let model = ScriptedModel::new([ScriptedReply::text("{\"town\": \"Oslo\"}")]);
    let agent = ChatAgent::builder("geo")
        .model(model)
        .structured_output(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }))
        .build()
        .unwrap();
    let err = agent
        .run(ask("where?"), RunContext::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("model error: 'geo' gave no valid structured output"),
        "{text}"
    );
    assert!(text.contains("\"city\" is a required property"), "{text}");
    assert!(text.contains("asked again, the model failed"), "{text}");
    assert_eq!(err.kind(), ErrorKind::Model);
    // The failure of the call that asked again stays reachable.
    assert!(
        std::error::Error::source(&err).is_some_and(|s| s.to_string().contains("exhausted")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_handoff_outside_the_handoffs_is_the_cause() {
    let model = ScriptedModel::new([ScriptedReply::handoff("zed", "over to you")]);
    let agent = ChatAgent::builder("desk")
        .model(model)
        .handoff("billing")
        .build()
        .unwrap();
    let err = agent.run(ask("help"), RunContext::new()).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "'desk' called 'transfer_to_zed' (a handoff to 'zed', which is not among its handoffs)"
        ),
        "{text}"
    );
    assert!(text.contains("transfer_to_billing"), "{text}");
    assert!(text.contains("asked again, the model failed"), "{text}");
}

#[tokio::test]
async fn a_model_that_answers_after_a_correction_is_not_an_error() {
    let model = ScriptedModel::new([
        ScriptedReply::handoff("zed", "over to you"),
        ScriptedReply::text("I will answer myself."),
    ]);
    let agent = ChatAgent::builder("desk")
        .model(model)
        .handoff("billing")
        .build()
        .unwrap();
    let reply = agent.run(ask("help"), RunContext::new()).await.unwrap();
    let last = reply.messages().last().unwrap();
    assert_eq!(last.text_content(), "I will answer myself.");
}
