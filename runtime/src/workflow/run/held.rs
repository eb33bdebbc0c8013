//! A held reply and the reply it holds: the conversions both ways, here
//! with the run that holds replies, so that the checkpoint's vocabulary
//! (`workflow/held_reply.rs`) needs nothing of the agent's.

use crate::agent::Reply;
use crate::resumable::held_reply::HeldReply;

impl HeldReply {
    /// Node `node`'s `reply`, copied; `None` when its thread cannot be
    /// encoded (the turn then runs again on a resume, as before replies
    /// were held).
    pub(crate) fn of(node: &str, reply: &Reply) -> Option<Self> {
        let thread = match &reply.thread {
            Some(t) => Some(crate::checkpoint::codec::encode(t).ok()?),
            None => None,
        };
        Some(HeldReply {
            node: node.to_string(),
            messages: reply.messages.clone(),
            thread,
            next: reply.next.clone(),
            request: reply.request.clone(),
            private: reply.private.clone(),
            inner_requests: reply.inner_requests.clone(),
            state: reply.state.clone(),
        })
    }

    /// The reply again; `None` when its thread cannot be decoded (the
    /// turn then runs again).
    pub(crate) fn into_reply(self) -> Option<Reply> {
        let thread = match &self.thread {
            Some(bytes) => Some(crate::checkpoint::codec::decode(bytes).ok()?),
            None => None,
        };
        Some(Reply {
            messages: self.messages,
            thread,
            next: self.next,
            request: self.request,
            private: self.private,
            inner_requests: self.inner_requests,
            state: self.state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::thread::Thread;

    #[test]
    fn a_reply_held_and_given_back_is_the_same() {
        let mut reply = Reply::text("done").with_state("k", "v");
        reply.private.push(Message::text("a", "a call"));
        reply.next = Some(vec!["b".into()]);
        reply.thread = Some(Thread::from_messages([Message::user("hi")]));
        let held = HeldReply::of("a", &reply).unwrap();
        let bytes = crate::checkpoint::codec::encode(&held).unwrap();
        let back: HeldReply = crate::checkpoint::codec::decode(&bytes).unwrap();
        assert_eq!(back, held);
        let again = back.into_reply().unwrap();
        assert_eq!(again.messages, reply.messages);
        assert_eq!(again.private, reply.private);
        assert_eq!(again.thread, reply.thread);
        assert_eq!(again.next, reply.next);
        assert_eq!(again.state, reply.state);
    }
}
