//! The size of a `ChatAgent`'s turn future, as a test (issue 38 item 5;
//! ARCHITECTURE.md, "Hot path"). Every turn builds this future and moves it
//! into its box, every byte of it written and copied, so its rare ways
//! (resuming a round that waited for the caller, running tool calls,
//! reading a stream, going on after a cut-off answer) are boxed out of it
//! (`agents/src/chat_agent/`: `Box::pin` in `mod.rs`, `model_call.rs`,
//! `on_length.rs`). BENCHMARKS.md measured 1,720 → 1,144 → 816 bytes in
//! the `dist` build; the test (debug) build's is 776 today. Raise the bound
//! only with a reason in the commit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_runtime::{Agent, Message, RunContext, Thread};

/// The bound on a tool-less `ChatAgent`'s turn future: BENCHMARKS.md's
/// 816 bytes.
const CHAT_TURN_FUTURE_MAX: usize = 816;

#[cfg(target_pointer_width = "64")]
#[tokio::test]
async fn a_chat_agents_turn_future_stays_small() {
    let agent = ChatAgent::builder("a")
        .model(Arc::new(ScriptedModel::new([ScriptedReply::text("hi")])))
        .build()
        .unwrap();
    let thread = Arc::new(Thread::from_messages([Message::user("hello")]));
    let turn = agent.run(thread, RunContext::new());
    // `async_trait` boxes the turn: what the box holds is the turn's state.
    let size = std::mem::size_of_val(&*turn);
    assert!(
        size <= CHAT_TURN_FUTURE_MAX,
        "a ChatAgent's turn future is {size} bytes, over {CHAT_TURN_FUTURE_MAX}: every turn \
         writes and copies all of it; box the new rare path (Box::pin) instead of growing it"
    );
    // The future measured is the one that answers.
    let reply = turn.await.unwrap();
    assert_eq!(reply.messages()[0].text_content(), "hi");
}
