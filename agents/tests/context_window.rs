//! The default context: a `ChatAgent` shows its model no more of a long
//! thread than fits in the model's context window (the window the model
//! reports, else `DEFAULT_CONTEXT_WINDOW`), so a long run neither renders
//! the whole thread every turn nor sends requests the model must refuse.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use troupe_agents::{
    ChatAgent, ChatMessage, ContextPolicy, DEFAULT_CONTEXT_WINDOW, ScriptedModel, ScriptedReply,
};
use troupe_runtime::{Agent, Message, RunContext, Thread};

/// A thread of `n` messages of `chars` characters each, the user's and
/// the agent's in turn, ending with the user's.
fn long_thread(n: usize, chars: usize) -> Arc<Thread> {
    let body = "x".repeat(chars);
    Arc::new(Thread::from_messages((0..n).map(|i| {
        if (n - i) % 2 == 1 {
            Message::user(format!("{i} {body}"))
        } else {
            Message::text("agent", format!("{i} {body}"))
        }
    })))
}

/// The messages the model was shown on its only call.
async fn shown(model: &Arc<ScriptedModel>, agent: ChatAgent, thread: Arc<Thread>) -> usize {
    agent.run(thread, RunContext::new()).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    requests[0].messages.len()
}

fn scripted() -> ScriptedModel {
    ScriptedModel::new([ScriptedReply::text("ok")])
}

#[tokio::test]
async fn the_default_context_fits_the_window_the_model_reports() {
    // 1,000 messages of about 100 tokens each; a window of 2,000 tokens
    // less 500 for the answer holds about 15 of them.
    let model = Arc::new(scripted().with_context_window(2_000));
    let agent = ChatAgent::builder("agent")
        .model(model.clone())
        .max_tokens(500)
        .build()
        .unwrap();
    let n = shown(&model, agent, long_thread(1_000, 400)).await;
    assert!((10..=16).contains(&n), "{n} messages shown");
    let last = &model.requests()[0].messages[n - 1];
    assert!(matches!(last, ChatMessage::User { .. }), "{last:?}");
    assert!(last.text().starts_with("999 "), "the newest is kept");
}

#[tokio::test]
async fn a_model_without_a_window_gets_the_default_one() {
    // 400 messages of about 1,000 tokens: more than the default window.
    let model = Arc::new(scripted());
    let agent = ChatAgent::builder("agent")
        .model(model.clone())
        .build()
        .unwrap();
    let n = shown(&model, agent, long_thread(400, 4_000)).await;
    let tokens_each = 4_000 / 4;
    assert!(n < 400, "the whole thread was shown");
    assert!(
        n >= DEFAULT_CONTEXT_WINDOW / tokens_each - 2,
        "{n} messages shown: the window is not filled"
    );
    assert!(n <= DEFAULT_CONTEXT_WINDOW / tokens_each, "{n} messages");
}

#[tokio::test]
async fn a_short_thread_is_shown_whole_and_whole_thread_stays_available() {
    let model = Arc::new(scripted().with_context_window(2_000));
    let agent = ChatAgent::builder("agent")
        .model(model.clone())
        .build()
        .unwrap();
    assert_eq!(shown(&model, agent, long_thread(5, 40)).await, 5);

    let model = Arc::new(scripted().with_context_window(2_000));
    let agent = ChatAgent::builder("agent")
        .model(model.clone())
        .context(ContextPolicy::WholeThread)
        .build()
        .unwrap();
    assert_eq!(shown(&model, agent, long_thread(1_000, 400)).await, 1_000);
}
