//! [`ContextPolicy`]: how much of its thread an agent shows its model, and
//! the memories kept from what is left out.

use std::sync::Arc;

use troupe_runtime::{Content, Message};

use crate::conversation::{Rendered, is_answer, is_tool_round, pair_tool_calls, render};
use crate::model::ChatMessage;

/// How much of the thread the model is shown on each call.
///
/// Trimming drops the oldest messages. A tool result that carries a
/// `memory` (seed pattern 6, an action's memory) leaves that note behind
/// when it is trimmed: the notes of trimmed results are listed after the
/// system instructions, so the model keeps what the tool wanted remembered
/// without the raw output. Tool calls and results cut apart by trimming are
/// dropped together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContextPolicy {
    /// The newest messages that fit in the model's context window (the
    /// default): [`TokenBudget`](Self::TokenBudget) of the window the
    /// model reports ([`ChatModel::context_window`]), else
    /// [`DEFAULT_CONTEXT_WINDOW`], less the answer's `max_tokens`. A long
    /// run then costs each turn what the window holds, not the whole
    /// thread, and never sends a request the model must refuse.
    ///
    /// [`ChatModel::context_window`]: crate::ChatModel::context_window
    #[default]
    ModelWindow,
    /// Every message, however long the thread grows.
    WholeThread,
    /// The last N messages of the thread (a message with several tool
    /// results counts once); at least one.
    LastN(usize),
    /// The newest messages that fit in this many tokens, estimated at four
    /// characters a token; the system instructions count against it, the
    /// memory notes do not. The newest message is always kept.
    TokenBudget(usize),
}

/// The context window assumed for a model that does not report its own
/// (see [`ContextPolicy::ModelWindow`]), in tokens.
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;

/// What the model is shown of a thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Context {
    /// The conversation, oldest first, calls and results paired.
    pub messages: Vec<ChatMessage>,
    /// Memories of trimmed tool results, as `tool: memory`, oldest first.
    pub memories: Vec<String>,
}

/// Tokens of a chat message, roughly (four characters a token, plus a few
/// for the message's framing).
pub(crate) fn estimate_tokens(message: &ChatMessage) -> usize {
    let chars = match message {
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            content.as_deref().map_or(0, |c| c.chars().count())
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.chars().count())
                    .sum::<usize>()
        }
        other => other.text().chars().count(),
    };
    chars.div_ceil(4) + 4
}

/// The messages an agent's turn sees: its thread, then what it produced so
/// far this turn. Two slices, not one list, so a turn never copies the
/// whole thread to look at its end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Messages<'a> {
    /// The thread, oldest first.
    pub thread: &'a [Arc<Message>],
    /// This turn's messages so far, oldest first.
    pub produced: &'a [Message],
}

impl<'a> Messages<'a> {
    fn len(&self) -> usize {
        self.thread.len() + self.produced.len()
    }

    fn get(&self, i: usize) -> Option<&'a Message> {
        match self.thread.get(i) {
            Some(m) => Some(m),
            None => self.produced.get(i - self.thread.len()),
        }
    }

    /// Whether message `i` is the caller's answer to a question `me` asked
    /// in the middle of a tool round (`ask_user`, an approval): the answer
    /// is that call's result, so it is not shown again as a user turn.
    /// Such a turn is the only one of `me` to end on a tool round.
    fn answers_own_call(&self, me: &str, i: usize) -> bool {
        self.get(i).is_some_and(is_answer)
            && (0..i)
                .rev()
                .filter_map(|j| self.get(j))
                .find(|m| &*m.source == me)
                .is_some_and(|m| is_tool_round(me, m))
    }

    /// What message `i` shows agent `me`'s model.
    fn render(&self, me: &str, i: usize) -> Rendered {
        match self.get(i) {
            Some(_) if self.answers_own_call(me, i) => Rendered::None,
            Some(m) => render(me, m),
            None => Rendered::None,
        }
    }
}

impl ContextPolicy {
    /// Selects what agent `me` shows its model of `messages`, leaving
    /// `reserved` tokens (the system instructions) out of a budget.
    ///
    /// Trimming policies render from the newest message back and stop once
    /// the window is full, so a turn costs what it shows, not the thread's
    /// length. `remember` says whether trimmed tool results may hold
    /// memories (an agent without tools has none), which spares a tool-less
    /// agent the scan over the trimmed part.
    pub(crate) fn apply(
        &self,
        me: &str,
        messages: Messages<'_>,
        reserved: usize,
        remember: bool,
    ) -> Context {
        let rendered = (0..messages.len())
            .rev()
            .map(|i| (i, messages.render(me, i)))
            .filter(|(_, rendered)| !rendered.is_empty());
        // Newest first while choosing.
        let mut units: Vec<(usize, Rendered)> = match *self {
            ContextPolicy::WholeThread => {
                // One allocation: a filtered iterator collects by doubling.
                let mut units = Vec::with_capacity(messages.len());
                units.extend(rendered);
                units
            }
            ContextPolicy::LastN(n) => {
                let n = n.max(1);
                let mut units = Vec::with_capacity(n.min(messages.len()));
                units.extend(rendered.take(n));
                units
            }
            ContextPolicy::TokenBudget(budget) => within_budget(rendered, budget, reserved),
            // An agent resolves the window of its model before it gets
            // here; alone, the policy assumes the default window.
            ContextPolicy::ModelWindow => within_budget(rendered, DEFAULT_CONTEXT_WINDOW, reserved),
        };
        units.reverse();
        // Results whose calls were trimmed cannot be shown: they count as
        // trimmed (and leave their memories).
        let keep_from = units
            .iter()
            .position(|(_, unit)| {
                !unit
                    .as_slice()
                    .iter()
                    .all(|m| matches!(m, ChatMessage::Tool { .. }))
            })
            .unwrap_or(units.len());
        let cutoff = units.get(keep_from).map_or(messages.len(), |(i, _)| *i);
        let memories = if remember {
            (0..cutoff)
                .filter_map(|i| messages.get(i))
                .filter(|m| &*m.source == me)
                .filter_map(|m| match &m.content {
                    Content::ToolResults(results) => Some(results),
                    _ => None,
                })
                .flatten()
                .filter_map(|r| {
                    r.memory
                        .as_ref()
                        .map(|memory| format!("{}: {memory}", r.name))
                })
                .collect()
        } else {
            Vec::new()
        };
        // One slot more than shown: the caller puts its system message in
        // front without growing the list.
        let shown: usize = units[keep_from..]
            .iter()
            .map(|(_, unit)| unit.as_slice().len())
            .sum();
        let mut kept = Vec::with_capacity(shown + 1);
        for (_, unit) in units.into_iter().skip(keep_from) {
            match unit {
                Rendered::None => {}
                Rendered::One(m) => kept.push(m),
                Rendered::Many(ms) => kept.extend(ms),
            }
        }
        Context {
            messages: pair_tool_calls(kept),
            memories,
        }
    }
}

/// The newest of `rendered` (newest first) that fit in `budget` tokens
/// less `reserved`; the newest is always kept.
fn within_budget(
    rendered: impl Iterator<Item = (usize, Rendered)>,
    budget: usize,
    reserved: usize,
) -> Vec<(usize, Rendered)> {
    let mut left = budget.saturating_sub(reserved);
    let mut kept = Vec::new();
    for unit in rendered {
        let cost: usize = unit.1.as_slice().iter().map(estimate_tokens).sum();
        if cost > left && !kept.is_empty() {
            break;
        }
        left = left.saturating_sub(cost);
        kept.push(unit);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_runtime::{message::ToolCall, message::ToolResult};

    fn tool_round(me: &str, id: &str, content: &str, memory: Option<&str>) -> [Message; 2] {
        [
            Message::new(
                me,
                Content::ToolCalls(vec![ToolCall {
                    id: id.into(),
                    name: "search".into(),
                    arguments: "{}".into(),
                }]),
            ),
            Message::new(
                me,
                Content::ToolResults(vec![ToolResult {
                    call_id: id.into(),
                    name: "search".into(),
                    content: content.into(),
                    is_error: false,
                    memory: memory.map(Into::into),
                }]),
            ),
        ]
    }

    fn thread() -> Vec<Message> {
        let mut v = vec![Message::user("find things")];
        v.extend(tool_round(
            "me",
            "1",
            &"raw page one ".repeat(40),
            Some("page one says A"),
        ));
        v.extend(tool_round("me", "2", "raw page two", None));
        v.push(Message::text("me", "done"));
        v
    }

    #[test]
    fn whole_thread_keeps_everything_and_no_memories() {
        let t = thread();
        let refs = Messages {
            thread: &[],
            produced: &t,
        };
        let c = ContextPolicy::WholeThread.apply("me", refs, 0, true);
        assert_eq!(c.messages.len(), 6);
        assert!(c.memories.is_empty());
    }

    #[test]
    fn last_n_trims_and_keeps_memories_of_trimmed_results() {
        let t = thread();
        let refs = Messages {
            thread: &[],
            produced: &t,
        };
        let c = ContextPolicy::LastN(3).apply("me", refs, 0, true);
        assert_eq!(c.memories, vec!["search: page one says A"]);
        assert_eq!(c.messages.len(), 3);
        assert!(
            matches!(&c.messages[0], ChatMessage::Assistant { tool_calls, .. } if tool_calls[0].id == "2")
        );

        // Cutting between a call and its result drops the lone result too.
        let c = ContextPolicy::LastN(4).apply("me", refs, 0, true);
        assert_eq!(c.messages.len(), 3, "{:?}", c.messages);
        assert_eq!(c.memories, vec!["search: page one says A"]);
    }

    #[test]
    fn token_budget_keeps_the_newest_that_fit() {
        let t = thread();
        let refs = Messages {
            thread: &[],
            produced: &t,
        };
        let c = ContextPolicy::TokenBudget(40).apply("me", refs, 0, true);
        assert_eq!(c.memories, vec!["search: page one says A"]);
        assert_eq!(c.messages.last(), Some(&ChatMessage::assistant("done")));
        assert!(
            c.messages
                .iter()
                .all(|m| !m.text().contains("raw page one"))
        );
        let c = ContextPolicy::TokenBudget(0).apply("me", refs, 100, true);
        assert_eq!(
            c.messages,
            vec![ChatMessage::assistant("done")],
            "the newest is always kept"
        );
    }
}
