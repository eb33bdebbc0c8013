//! A thread seen by one agent, as the chat messages its model is shown.
//!
//! The agent's own messages are the assistant's turns (its tool calls and
//! their results included); the user's messages are user turns; other
//! agents' text, structured output and handoffs are user turns carrying
//! their name. Other agents' tool calls and results are their business and
//! are left out, as are stop messages.

use std::collections::HashSet;

use troupe_runtime::{Content, Message, message::USER};

use crate::model::ChatMessage;
use crate::tool::sanitize_tool_name;

/// Metadata key under which a ChatAgent keeps text the model sent along
/// with tool calls (a `ToolCalls` message has no room for it).
pub(crate) const ASSISTANT_TEXT: &str = "assistant_text";

/// Metadata key the workflow puts on the caller's answer to an input
/// request (its value is the request's id; see the runtime's
/// `workflow/answer.rs`).
pub(crate) const ANSWER_KEY: &str = "troupe.request";

/// Whether `message` is the caller's answer to an input request.
pub(crate) fn is_answer(message: &Message) -> bool {
    message.metadata.contains_key(ANSWER_KEY)
}

/// Whether `message`, from `me`, is part of a tool round (its calls or
/// their results): a turn that ended on one was waiting for the user.
pub(crate) fn is_tool_round(me: &str, message: &Message) -> bool {
    &*message.source == me
        && matches!(
            message.content,
            Content::ToolCalls(_) | Content::ToolResults(_)
        )
}

/// The chat messages one thread message becomes: nearly always one, so
/// that one is not put in a `Vec` of its own (a turn renders every message
/// it shows).
#[derive(Debug, PartialEq)]
pub(crate) enum Rendered {
    /// Nothing shown.
    None,
    /// One chat message.
    One(ChatMessage),
    /// Several (the results of a round of tool calls).
    Many(Vec<ChatMessage>),
}

impl Rendered {
    /// The chat messages, in order.
    pub(crate) fn as_slice(&self) -> &[ChatMessage] {
        match self {
            Rendered::None => &[],
            Rendered::One(m) => std::slice::from_ref(m),
            Rendered::Many(v) => v,
        }
    }

    /// Whether nothing is shown.
    pub(crate) fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl IntoIterator for Rendered {
    type Item = ChatMessage;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<ChatMessage>, std::vec::IntoIter<ChatMessage>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            Rendered::None => (None, Vec::new()),
            Rendered::One(m) => (Some(m), Vec::new()),
            Rendered::Many(v) => (None, v),
        };
        one.into_iter().chain(many)
    }
}

/// The chat messages `message` becomes for agent `me` (possibly none).
pub(crate) fn render(me: &str, message: &Message) -> Rendered {
    let own = &*message.source == me;
    let from_user = &*message.source == USER || message.source.is_empty();
    let as_user = |content: String| ChatMessage::User {
        content,
        name: (!from_user).then(|| sanitize_tool_name(&message.source)),
    };
    match &message.content {
        Content::Text(text) | Content::Structured(text) => Rendered::One(if own {
            ChatMessage::assistant(text.clone())
        } else {
            as_user(text.clone())
        }),
        Content::ToolCalls(calls) if own => Rendered::One(ChatMessage::Assistant {
            content: message.metadata.get(ASSISTANT_TEXT).cloned(),
            tool_calls: calls.clone(),
        }),
        Content::ToolResults(results) if own => Rendered::Many(
            results
                .iter()
                .map(|r| ChatMessage::tool(r.call_id.clone(), r.content.clone()))
                .collect(),
        ),
        Content::Handoff(h) if !own => Rendered::One(as_user(format!(
            "[{} hands off to {}] {}",
            message.source, h.target, h.reason
        ))),
        Content::ToolCalls(_)
        | Content::ToolResults(_)
        | Content::Handoff(_)
        | Content::Stop(_) => Rendered::None,
    }
}

/// Makes tool calls and results pair up, as providers require: every call
/// of an assistant turn answered by a tool message right after it, and no
/// tool message without its call. Trimming a conversation can cut a pair
/// apart; the unpaired halves are dropped. A turn that waited for the user
/// mid-round has its results split by what arrived meanwhile: they are
/// gathered back behind their calls (looking no further than the next
/// assistant turn).
pub(crate) fn pair_tool_calls(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    // Most turns show no tool round at all: nothing to pair.
    let round = |m: &ChatMessage| match m {
        ChatMessage::Assistant { tool_calls, .. } => !tool_calls.is_empty(),
        ChatMessage::Tool { .. } => true,
        ChatMessage::System { .. } | ChatMessage::User { .. } => false,
    };
    if !messages.iter().any(round) {
        return messages;
    }
    let mut slots: Vec<Option<ChatMessage>> = messages.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        let Some(message) = slots[i].take() else {
            continue;
        };
        match message {
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let wanted: HashSet<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                let mut answered: HashSet<String> = HashSet::new();
                let mut results = Vec::new();
                for slot in slots[i + 1..].iter_mut() {
                    match slot {
                        Some(ChatMessage::Assistant { .. }) => break,
                        Some(ChatMessage::Tool { call_id, .. })
                            if wanted.contains(call_id.as_str())
                                && !answered.contains(call_id.as_str()) =>
                        {
                            answered.insert(call_id.clone());
                            results.extend(slot.take());
                        }
                        _ => {}
                    }
                }
                let calls: Vec<_> = tool_calls
                    .into_iter()
                    .filter(|c| answered.contains(c.id.as_str()))
                    .collect();
                let has_text = content.as_deref().is_some_and(|t| !t.is_empty());
                if calls.is_empty() {
                    if has_text {
                        out.push(ChatMessage::Assistant {
                            content,
                            tool_calls: Vec::new(),
                        });
                    }
                    continue;
                }
                out.push(ChatMessage::Assistant {
                    content,
                    tool_calls: calls,
                });
                out.extend(results);
            }
            ChatMessage::Tool { .. } => {} // its call was trimmed away
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_runtime::{message::ToolCall, message::ToolResult};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn own_and_foreign_messages() {
        let me = "me";
        assert_eq!(
            render(me, &Message::user("hi")),
            Rendered::One(ChatMessage::user("hi"))
        );
        assert_eq!(
            render(me, &Message::text("bob smith", "yo")),
            Rendered::One(ChatMessage::User {
                content: "yo".into(),
                name: Some("bob_smith".into())
            })
        );
        assert_eq!(
            render(me, &Message::text("me", "ok")),
            Rendered::One(ChatMessage::assistant("ok"))
        );
        let calls = Message::new("bob", Content::ToolCalls(vec![call("1")]));
        assert!(
            render(me, &calls).is_empty(),
            "another agent's tool calls stay out"
        );
        let results = Message::new(
            "me",
            Content::ToolResults(vec![ToolResult {
                call_id: "1".into(),
                name: "t".into(),
                content: "r".into(),
                is_error: false,
                memory: None,
            }]),
        );
        assert_eq!(
            render(me, &results).as_slice(),
            [ChatMessage::tool("1", "r")]
        );
        let handoff = Message::handoff("bob", "me", "your turn");
        assert_eq!(
            render(me, &handoff).as_slice()[0].text(),
            "[bob hands off to me] your turn"
        );
        assert!(render("bob", &handoff).is_empty());
    }

    #[test]
    fn unpaired_calls_and_results_are_dropped() {
        let messages = vec![
            ChatMessage::tool("orphan", "x"),
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                content: Some("let me look".into()),
                tool_calls: vec![call("a"), call("b")],
            },
            ChatMessage::tool("a", "ra"),
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![call("c")],
            },
            ChatMessage::user("next"),
        ];
        let paired = pair_tool_calls(messages);
        assert_eq!(
            paired,
            vec![
                ChatMessage::user("q"),
                ChatMessage::Assistant {
                    content: Some("let me look".into()),
                    tool_calls: vec![call("a")],
                },
                ChatMessage::tool("a", "ra"),
                ChatMessage::user("next"),
            ]
        );
    }

    #[test]
    fn results_split_by_a_wait_are_gathered_behind_their_calls() {
        let messages = vec![
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![call("a"), call("b")],
            },
            ChatMessage::tool("a", "ra"),
            ChatMessage::user("meanwhile"),
            ChatMessage::tool("b", "rb"),
            ChatMessage::assistant("done"),
            ChatMessage::tool("b", "late"),
        ];
        assert_eq!(
            pair_tool_calls(messages),
            vec![
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![call("a"), call("b")],
                },
                ChatMessage::tool("a", "ra"),
                ChatMessage::tool("b", "rb"),
                ChatMessage::user("meanwhile"),
                ChatMessage::assistant("done"),
            ]
        );
    }
}
