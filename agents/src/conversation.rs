//! A thread seen by one agent, as the chat messages its model is shown.
//!
//! The agent's own messages are the assistant's turns (its tool calls and
//! their results included); the user's messages are user turns; other
//! agents' text, structured output and handoffs are user turns carrying
//! their name. Other agents' tool calls and results are their business and
//! are left out, as are stop messages.

use std::collections::HashSet;

use troupe_runtime::{Content, Message, USER};

use crate::model::ChatMessage;
use crate::tool::sanitize_tool_name;

/// Metadata key under which a ChatAgent keeps text the model sent along
/// with tool calls (a `ToolCalls` message has no room for it).
pub(crate) const ASSISTANT_TEXT: &str = "assistant_text";

/// The chat messages `message` becomes for agent `me` (possibly none).
pub(crate) fn render(me: &str, message: &Message) -> Vec<ChatMessage> {
    let own = &*message.source == me;
    let from_user = &*message.source == USER || message.source.is_empty();
    let as_user = |content: String| ChatMessage::User {
        content,
        name: (!from_user).then(|| sanitize_tool_name(&message.source)),
    };
    match &message.content {
        Content::Text(text) | Content::Structured(text) => {
            if own {
                vec![ChatMessage::assistant(text.clone())]
            } else {
                vec![as_user(text.clone())]
            }
        }
        Content::ToolCalls(calls) if own => vec![ChatMessage::Assistant {
            content: message.metadata.get(ASSISTANT_TEXT).cloned(),
            tool_calls: calls.clone(),
        }],
        Content::ToolResults(results) if own => results
            .iter()
            .map(|r| ChatMessage::tool(r.call_id.clone(), r.content.clone()))
            .collect(),
        Content::Handoff(h) if !own => vec![as_user(format!(
            "[{} hands off to {}] {}",
            message.source, h.target, h.reason
        ))],
        Content::ToolCalls(_)
        | Content::ToolResults(_)
        | Content::Handoff(_)
        | Content::Stop(_) => Vec::new(),
    }
}

/// Makes tool calls and results pair up, as providers require: every call
/// of an assistant turn answered by a tool message right after it, and no
/// tool message without its call. Trimming a conversation can cut a pair
/// apart; the unpaired halves are dropped.
pub(crate) fn pair_tool_calls(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut iter = messages.into_iter().peekable();
    while let Some(message) = iter.next() {
        match message {
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let mut results = Vec::new();
                while let Some(ChatMessage::Tool { .. }) = iter.peek() {
                    if let Some(result) = iter.next() {
                        results.push(result);
                    }
                }
                let answered: HashSet<&str> = results
                    .iter()
                    .filter_map(|r| match r {
                        ChatMessage::Tool { call_id, .. } => Some(call_id.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<_> = tool_calls
                    .into_iter()
                    .filter(|c| answered.contains(c.id.as_str()))
                    .collect();
                let called: HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
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
                out.extend(results.into_iter().filter(|r| match r {
                    ChatMessage::Tool { call_id, .. } => called.contains(call_id),
                    _ => false,
                }));
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
    use troupe_runtime::{ToolCall, ToolResult};

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
            vec![ChatMessage::user("hi")]
        );
        assert_eq!(
            render(me, &Message::text("bob smith", "yo")),
            vec![ChatMessage::User {
                content: "yo".into(),
                name: Some("bob_smith".into())
            }]
        );
        assert_eq!(
            render(me, &Message::text("me", "ok")),
            vec![ChatMessage::assistant("ok")]
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
        assert_eq!(render(me, &results), vec![ChatMessage::tool("1", "r")]);
        let handoff = Message::handoff("bob", "me", "your turn");
        assert_eq!(
            render(me, &handoff)[0].text(),
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
}
