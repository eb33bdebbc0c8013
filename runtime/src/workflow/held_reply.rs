//! [`HeldReply`]: the reply of a turn that finished in a superstep still
//! under way, as a checkpoint keeps it until the superstep's barrier — so
//! that a run resumed from that checkpoint applies it there instead of
//! running the turn again.

use serde::{Deserialize, Serialize};

use super::request::InputRequest;
use crate::agent::Reply;
use crate::message::Message;
use crate::state::StateDelta;
use crate::thread::Thread;

/// A finished turn's reply, held for its superstep's barrier: every part
/// of a [`Reply`], under the node's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldReply {
    /// The node whose turn it is.
    pub(crate) node: String,
    /// [`Reply::messages`].
    pub(crate) messages: Vec<Message>,
    /// [`Reply::thread`].
    pub(crate) thread: Option<Thread>,
    /// [`Reply::next`].
    pub(crate) next: Option<Vec<String>>,
    /// [`Reply::request`].
    pub(crate) request: Option<String>,
    /// [`Reply::private`].
    pub(crate) private: Vec<Message>,
    /// [`Reply::inner_requests`].
    pub(crate) inner_requests: Vec<InputRequest>,
    /// [`Reply::state`].
    pub(crate) state: StateDelta,
}

impl HeldReply {
    /// Node `node`'s `reply`, copied.
    pub(crate) fn of(node: &str, reply: &Reply) -> Self {
        HeldReply {
            node: node.to_string(),
            messages: reply.messages.clone(),
            thread: reply.thread.clone(),
            next: reply.next.clone(),
            request: reply.request.clone(),
            private: reply.private.clone(),
            inner_requests: reply.inner_requests.clone(),
            state: reply.state.clone(),
        }
    }

    /// The reply again.
    pub(crate) fn into_reply(self) -> Reply {
        Reply {
            messages: self.messages,
            thread: self.thread,
            next: self.next,
            request: self.request,
            private: self.private,
            inner_requests: self.inner_requests,
            state: self.state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_held_and_given_back_is_the_same() {
        let mut reply = Reply::text("done").with_state("k", "v");
        reply.private.push(Message::text("a", "a call"));
        reply.next = Some(vec!["b".into()]);
        reply.thread = Some(Thread::from_messages([Message::user("hi")]));
        let held = HeldReply::of("a", &reply);
        let bytes = crate::codec::encode(&held).unwrap();
        let back: HeldReply = crate::codec::decode(&bytes).unwrap();
        assert_eq!(back, held);
        let again = back.into_reply();
        assert_eq!(again.messages, reply.messages);
        assert_eq!(again.private, reply.private);
        assert_eq!(again.thread, reply.thread);
        assert_eq!(again.next, reply.next);
        assert_eq!(again.state, reply.state);
    }
}
