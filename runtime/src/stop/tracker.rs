//! [`StopTracker`]: a condition with the counters and latches of one run.

use super::{StopCondition, StopReason};
use crate::message::{Content, Message};

/// What just happened, for a condition to judge.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Trigger<'a> {
    /// A message entered the run; `produced` is false for inputs.
    Message {
        message: &'a Message,
        produced: bool,
    },
    /// A message a turn kept in the agent's own thread (its tool calls
    /// and results): only conditions on tool calls judge it, and nothing
    /// counts it.
    Inner(&'a Message),
    /// A turn ended.
    Turn,
    /// The run has lasted its shortest timeout.
    Timeout,
    /// An external handle was set.
    External,
}

/// A condition with the counters and latches of one run.
#[derive(Debug, Clone)]
pub(crate) struct StopTracker {
    condition: StopCondition,
    latched: Vec<bool>,
    messages: u64,
    turns: u64,
    tokens: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    timed_out: bool,
}

/// What a [`StopTracker`] has counted, as kept in checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct TrackerState {
    latched: Vec<bool>,
    messages: u64,
    turns: u64,
    tokens: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    timed_out: bool,
}

impl StopTracker {
    /// The counters, for a checkpoint.
    pub(crate) fn state(&self) -> TrackerState {
        TrackerState {
            latched: self.latched.clone(),
            messages: self.messages,
            turns: self.turns,
            tokens: self.tokens,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            timed_out: self.timed_out,
        }
    }

    /// Picks up the counting where a checkpoint left it (ignored if it was
    /// taken under another condition's shape).
    pub(crate) fn restore(&mut self, state: TrackerState) {
        if state.latched.len() == self.latched.len() {
            self.latched = state.latched;
        }
        self.messages = state.messages;
        self.turns = state.turns;
        self.tokens = state.tokens;
        self.prompt_tokens = state.prompt_tokens;
        self.completion_tokens = state.completion_tokens;
        self.timed_out = state.timed_out;
    }

    pub(crate) fn new(condition: StopCondition) -> Self {
        StopTracker {
            latched: vec![false; condition.node_count()],
            condition,
            messages: 0,
            turns: 0,
            tokens: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            timed_out: false,
        }
    }

    /// Records what happened; returns the reason if the run should stop.
    pub(crate) fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        match trigger {
            Trigger::Message { message, .. } => {
                self.messages += 1;
                if let Some(u) = message.usage {
                    self.tokens += u.total();
                    self.prompt_tokens += u.prompt_tokens;
                    self.completion_tokens += u.completion_tokens;
                }
            }
            Trigger::Turn => self.turns += 1,
            Trigger::Timeout => self.timed_out = true,
            Trigger::External | Trigger::Inner(_) => {}
        }
        let counters = Counters {
            messages: self.messages,
            turns: self.turns,
            tokens: self.tokens,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            timed_out: self.timed_out,
        };
        let mut index = 0;
        eval(
            &self.condition,
            &mut self.latched,
            &mut index,
            &counters,
            &trigger,
        )
    }
}

struct Counters {
    messages: u64,
    turns: u64,
    tokens: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    timed_out: bool,
}

/// Evaluates node `*index` (pre-order numbering) and its subtree, latching
/// what held so that `All` means "each has held at some point".
fn eval(
    cond: &StopCondition,
    latched: &mut [bool],
    index: &mut usize,
    c: &Counters,
    trigger: &Trigger<'_>,
) -> Option<StopReason> {
    let me = *index;
    *index += 1;
    let produced = match trigger {
        Trigger::Message {
            message,
            produced: true,
        } => Some(*message),
        _ => None,
    };
    let reason = |detail: String| {
        Some(StopReason {
            condition: cond.to_string(),
            detail,
        })
    };
    let now = match cond {
        StopCondition::MaxMessages(n) => (c.messages >= *n)
            .then(|| reason(format!("{} messages", c.messages)))
            .flatten(),
        StopCondition::MaxTurns(n) => (c.turns >= *n)
            .then(|| reason(format!("{} turns", c.turns)))
            .flatten(),
        StopCondition::TokenBudget(n) => (c.tokens >= *n)
            .then(|| reason(format!("{} tokens spent", c.tokens)))
            .flatten(),
        StopCondition::PromptTokens(n) => (c.prompt_tokens >= *n)
            .then(|| reason(format!("{} prompt tokens read", c.prompt_tokens)))
            .flatten(),
        StopCondition::CompletionTokens(n) => (c.completion_tokens >= *n)
            .then(|| reason(format!("{} completion tokens written", c.completion_tokens)))
            .flatten(),
        StopCondition::Timeout(d) => c
            .timed_out
            .then(|| reason(format!("ran for {}", humantime::format_duration(*d))))
            .flatten(),
        StopCondition::External(h) => h
            .is_set()
            .then(|| reason("stopped by the caller".into()))
            .flatten(),
        StopCondition::TextMention { text, sources } => produced
            .filter(|m| {
                sources
                    .as_ref()
                    .is_none_or(|s| s.iter().any(|s| **s == *m.source))
                    && m.text_content().contains(text.as_str())
            })
            .and_then(|m| reason(format!("'{}' mentioned it", m.source))),
        StopCondition::SourceMatch(sources) => produced
            .filter(|m| sources.iter().any(|s| **s == *m.source))
            .and_then(|m| reason(format!("'{}' spoke", m.source))),
        StopCondition::StopMessage => produced
            .filter(|m| matches!(m.content, Content::Stop(_)))
            .and_then(|m| {
                reason(format!(
                    "'{}' asked to stop: {}",
                    m.source,
                    m.text_content()
                ))
            }),
        StopCondition::FunctionCall(name) => produced
            .or(match trigger {
                Trigger::Inner(m) => Some(*m),
                _ => None,
            })
            .filter(|m| calls(m, name))
            .and_then(|m| reason(format!("'{}' called '{name}'", m.source))),
        StopCondition::TextMessage(sources) => produced
            .filter(|m| {
                matches!(m.content, Content::Text(_))
                    && sources
                        .as_ref()
                        .is_none_or(|s| s.iter().any(|s| **s == *m.source))
            })
            .and_then(|m| reason(format!("'{}' sent a text message", m.source))),
        StopCondition::Handoff(target) => produced
            .filter(|m| m.handoff_target() == Some(target.as_str()))
            .and_then(|m| reason(format!("'{}' handed off to '{target}'", m.source))),
        StopCondition::Custom(_, f) => produced
            .filter(|m| f(m))
            .and_then(|m| reason(format!("held for a message of '{}'", m.source))),
        StopCondition::Any(v) => {
            let mut first = None;
            for child in v {
                // Every child is evaluated so that latches and indexes stay right.
                let r = eval(child, latched, index, c, trigger);
                if first.is_none() {
                    first = r;
                }
            }
            first
        }
        StopCondition::All(v) => {
            let mut all = true;
            let mut details = Vec::new();
            for child in v {
                match eval(child, latched, index, c, trigger) {
                    Some(r) => details.push(r.detail),
                    None => all = false,
                }
            }
            all.then(|| reason(details.join("; "))).flatten()
        }
    };
    if now.is_some() {
        latched[me] = true;
        now
    } else if latched[me] {
        reason("held earlier in the run".into())
    } else {
        None
    }
}

/// Whether `m` requests the tool `name` or carries its result.
fn calls(m: &Message, name: &str) -> bool {
    match &m.content {
        Content::ToolCalls(calls) => calls.iter().any(|c| c.name == name),
        Content::ToolResults(results) => results.iter().any(|r| r.name == name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolResult, Usage};
    use crate::stop::StopHandle;
    use std::time::Duration;

    fn produced(m: &Message) -> Trigger<'_> {
        Trigger::Message {
            message: m,
            produced: true,
        }
    }

    #[test]
    fn max_messages_counts_inputs() {
        let mut t = StopTracker::new(StopCondition::max_messages(2));
        let u = Message::user("task");
        assert!(
            t.observe(Trigger::Message {
                message: &u,
                produced: false
            })
            .is_none()
        );
        let r = t.observe(produced(&Message::text("a", "x"))).unwrap();
        assert_eq!(r.condition, "max_messages(2)");
    }

    #[test]
    fn text_mention_ignores_inputs_and_other_sources() {
        let mut t = StopTracker::new(StopCondition::text_mention_from("DONE", ["b"]));
        let u = Message::user("say DONE");
        assert!(
            t.observe(Trigger::Message {
                message: &u,
                produced: false
            })
            .is_none()
        );
        assert!(t.observe(produced(&Message::text("a", "DONE"))).is_none());
        let r = t.observe(produced(&Message::text("b", "DONE!"))).unwrap();
        assert!(r.detail.contains("'b'"));
    }

    #[test]
    fn all_latches_each_part() {
        let mut t =
            StopTracker::new(StopCondition::text_mention("X") & StopCondition::source_match(["c"]));
        assert!(t.observe(produced(&Message::text("a", "X"))).is_none());
        assert!(
            t.observe(produced(&Message::text("b", "nothing")))
                .is_none()
        );
        assert!(t.observe(produced(&Message::text("c", "hello"))).is_some());
    }

    #[test]
    fn handoff_tokens_turns_external() {
        let mut t = StopTracker::new(StopCondition::handoff("user"));
        assert!(
            t.observe(produced(&Message::handoff("a", "b", "")))
                .is_none()
        );
        assert!(
            t.observe(produced(&Message::handoff("a", "user", "")))
                .is_some()
        );

        let mut t = StopTracker::new(StopCondition::token_budget(10));
        let m = Message::text("a", "x").with_usage(Usage {
            prompt_tokens: 6,
            completion_tokens: 5,
        });
        assert!(t.observe(produced(&m)).is_some());

        let mut t = StopTracker::new(StopCondition::max_turns(2));
        assert!(t.observe(Trigger::Turn).is_none());
        assert!(t.observe(Trigger::Turn).is_some());

        let h = StopHandle::new();
        let mut t = StopTracker::new(StopCondition::external(&h) | StopCondition::max_turns(9));
        assert!(t.observe(Trigger::External).is_none());
        h.stop();
        assert_eq!(t.observe(Trigger::External).unwrap().condition, "external");
    }

    #[test]
    fn prompt_and_completion_tokens_are_limited_apart() {
        let m = Message::text("a", "x").with_usage(Usage {
            prompt_tokens: 6,
            completion_tokens: 2,
        });
        let mut prompt = StopTracker::new(StopCondition::prompt_tokens(12));
        let mut completion = StopTracker::new(StopCondition::completion_tokens(5));
        assert!(prompt.observe(produced(&m)).is_none());
        assert!(completion.observe(produced(&m)).is_none());
        assert_eq!(
            prompt.observe(produced(&m)).unwrap().detail,
            "12 prompt tokens read"
        );
        assert!(completion.observe(produced(&m)).is_none());
        // Restored from a checkpoint, the counts carry on.
        let mut again = StopTracker::new(StopCondition::completion_tokens(5));
        again.restore(completion.state());
        assert_eq!(
            again.observe(produced(&m)).unwrap().detail,
            "6 completion tokens written"
        );
        assert_eq!(
            StopCondition::parse("prompt_tokens(3) | completion_tokens(4)")
                .unwrap()
                .to_string(),
            "prompt_tokens(3) | completion_tokens(4)"
        );
    }

    #[test]
    fn operators_flatten_and_display() {
        let c =
            StopCondition::max_turns(1) | StopCondition::max_turns(2) | StopCondition::max_turns(3);
        assert!(matches!(&c, StopCondition::Any(v) if v.len() == 3));
        let d = (StopCondition::max_turns(1) | StopCondition::max_turns(2))
            & StopCondition::handoff("u");
        assert_eq!(d.to_string(), "(max_turns(1) | max_turns(2)) & handoff(u)");
        assert!(StopCondition::timeout_str("nope").is_err());
        assert_eq!(
            StopCondition::timeout_str("1h").unwrap().shortest_timeout(),
            Some(Duration::from_secs(3600))
        );
    }

    #[test]
    fn stop_message_function_call_and_text_message() {
        let mut t = StopTracker::new(StopCondition::stop_message());
        assert!(t.observe(produced(&Message::text("a", "stop"))).is_none());
        let stop = Message::new("a", Content::Stop("done".into()));
        let r = t.observe(produced(&stop)).unwrap();
        assert_eq!(r.condition, "stop_message");
        assert!(r.detail.contains("done"));

        let mut t = StopTracker::new(StopCondition::function_call("search"));
        let call = |name: &str| {
            Message::new(
                "a",
                Content::ToolCalls(vec![ToolCall {
                    id: "1".into(),
                    name: name.into(),
                    arguments: "{}".into(),
                }]),
            )
        };
        assert!(t.observe(produced(&call("other"))).is_none());
        assert!(t.observe(produced(&Message::text("a", "search"))).is_none());
        // A call kept in the agent's own thread counts too, and only here.
        let mut counted = StopTracker::new(
            StopCondition::function_call("search") | StopCondition::max_messages(1),
        );
        let r = counted.observe(Trigger::Inner(&call("search"))).unwrap();
        assert_eq!(r.condition, "function_call(search)");
        assert_eq!(counted.state().messages, 0);
        assert!(t.observe(produced(&call("search"))).is_some());
        let mut t = StopTracker::new(StopCondition::function_call("search"));
        let result = Message::new(
            "tools",
            Content::ToolResults(vec![ToolResult {
                call_id: "1".into(),
                name: "search".into(),
                content: "found".into(),
                is_error: false,
                memory: None,
            }]),
        );
        assert!(t.observe(produced(&result)).is_some());

        let mut t = StopTracker::new(StopCondition::text_message_from(["b"]));
        assert!(t.observe(produced(&Message::text("a", "hi"))).is_none());
        assert!(
            t.observe(produced(&Message::handoff("b", "c", "go")))
                .is_none()
        );
        let u = Message::user("hi");
        assert!(
            t.observe(Trigger::Message {
                message: &u,
                produced: false
            })
            .is_none()
        );
        let r = t.observe(produced(&Message::text("b", "hi"))).unwrap();
        assert_eq!(r.condition, "text_message(b)");
        let mut t = StopTracker::new(StopCondition::text_message());
        assert!(t.observe(produced(&Message::text("z", "hi"))).is_some());
    }

    #[test]
    fn custom_is_the_functional_condition() {
        let mut t = StopTracker::new(StopCondition::custom("long", |m| {
            m.text_content().len() > 3
        }));
        assert!(t.observe(produced(&Message::text("a", "abc"))).is_none());
        let r = t.observe(produced(&Message::text("a", "abcd"))).unwrap();
        assert_eq!(r.condition, "custom(long)");
        assert_eq!(
            StopCondition::timeout(Duration::from_secs(2)).to_string(),
            "timeout(2s)"
        );
    }
}
