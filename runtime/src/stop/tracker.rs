//! [`StopTracker`]: a condition with the counters and latches of one run.

use super::tracker_state::TrackerState;
use super::{StopCondition, StopReason};
use crate::message::{Content, Message};
use crate::stats::AgentStats;

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
    /// A turn's spend was counted: what the run has spent in all now.
    Spent(&'a AgentStats),
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
    /// What the run's turns spent in all (kept in the run's own
    /// counters, not here).
    spent: AgentStats,
    /// Whether the condition reads `spent` (else a turn's spend changes
    /// nothing it judges).
    reads_spend: bool,
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
        let reads_spend = condition.reads_spend();
        StopTracker {
            latched: vec![false; condition.node_count()],
            condition,
            messages: 0,
            turns: 0,
            tokens: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            timed_out: false,
            spent: AgentStats::default(),
            reads_spend,
        }
    }

    /// What the run has spent in all, as a resumed run counts on from it.
    pub(crate) fn set_spent(&mut self, spent: AgentStats) {
        self.spent = spent;
    }

    /// Records what happened; returns the reason if the run should stop.
    pub(crate) fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        match trigger {
            Trigger::Message { message, produced } => {
                self.messages += 1;
                // What turns produce is counted by their spend.
                if let Some(u) = message.usage.filter(|_| !produced) {
                    self.tokens += u.total();
                    self.prompt_tokens += u.prompt_tokens;
                    self.completion_tokens += u.completion_tokens;
                }
            }
            Trigger::Turn => self.turns += 1,
            Trigger::Spent(total) => {
                self.spent = *total;
                if !self.reads_spend {
                    return None;
                }
            }
            Trigger::Timeout => self.timed_out = true,
            Trigger::External | Trigger::Inner(_) => {}
        }
        let spent = &self.spent;
        let counters = Counters {
            messages: self.messages,
            turns: self.turns,
            tokens: self.tokens + spent.tokens(),
            prompt_tokens: self.prompt_tokens + spent.input_tokens,
            completion_tokens: self.completion_tokens + spent.output_tokens,
            model_calls: spent.model_calls,
            tool_calls: spent.tool_calls,
            cost: spent.cost_usd(),
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
    model_calls: u64,
    tool_calls: u64,
    cost: f64,
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
        StopCondition::TurnCeiling { turns, advice } => (c.turns >= *turns)
            .then(|| {
                reason(format!(
                    "{} turns: the run reached its turn ceiling of {turns}; {advice}",
                    c.turns
                ))
            })
            .flatten(),
        StopCondition::TokenBudget(n) => (c.tokens >= *n)
            .then(|| reason(format!("budget: {} tokens spent ≥ {n}", c.tokens)))
            .flatten(),
        StopCondition::PromptTokens(n) => (c.prompt_tokens >= *n)
            .then(|| {
                reason(format!(
                    "budget: {} prompt tokens read ≥ {n}",
                    c.prompt_tokens
                ))
            })
            .flatten(),
        StopCondition::CompletionTokens(n) => (c.completion_tokens >= *n)
            .then(|| {
                reason(format!(
                    "budget: {} completion tokens written ≥ {n}",
                    c.completion_tokens
                ))
            })
            .flatten(),
        StopCondition::MaxCost(usd) => (c.cost >= *usd)
            .then(|| reason(format!("budget: cost {:.4} USD ≥ {usd}", c.cost)))
            .flatten(),
        StopCondition::MaxModelCalls(n) => (c.model_calls >= *n)
            .then(|| reason(format!("budget: {} model calls ≥ {n}", c.model_calls)))
            .flatten(),
        StopCondition::MaxToolCalls(n) => (c.tool_calls >= *n)
            .then(|| reason(format!("budget: {} tool calls ≥ {n}", c.tool_calls)))
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
        // A produced message's usage is counted by its turn's spend.
        assert!(t.observe(produced(&m)).is_none());
        assert!(t.observe(Trigger::Spent(&spent(6, 5))).is_some());
        // An input's usage counts on its own.
        let mut t = StopTracker::new(StopCondition::token_budget(10));
        let input = Trigger::Message {
            message: &m,
            produced: false,
        };
        assert!(t.observe(input).is_some());

        let mut t = StopTracker::new(StopCondition::max_turns(2));
        assert!(t.observe(Trigger::Turn).is_none());
        assert!(t.observe(Trigger::Turn).is_some());

        let h = StopHandle::new();
        let mut t = StopTracker::new(StopCondition::external(&h) | StopCondition::max_turns(9));
        let mut ceiling = StopTracker::new(StopCondition::turn_ceiling(2, "raise it"));
        assert!(ceiling.observe(Trigger::Turn).is_none());
        let r = ceiling.observe(Trigger::Turn).unwrap();
        assert_eq!(r.condition, "turn_ceiling(2)");
        assert!(
            r.detail.contains("turn ceiling of 2; raise it"),
            "{}",
            r.detail
        );
        assert!(t.observe(Trigger::External).is_none());
        h.stop();
        assert_eq!(t.observe(Trigger::External).unwrap().condition, "external");
    }

    fn spent(input: u64, output: u64) -> AgentStats {
        AgentStats {
            model_calls: 1,
            input_tokens: input,
            output_tokens: output,
            ..AgentStats::default()
        }
    }

    #[test]
    fn prompt_and_completion_tokens_are_limited_apart() {
        let mut prompt = StopTracker::new(StopCondition::prompt_tokens(12));
        let mut completion = StopTracker::new(StopCondition::completion_tokens(5));
        assert!(prompt.observe(Trigger::Spent(&spent(6, 2))).is_none());
        assert!(completion.observe(Trigger::Spent(&spent(6, 2))).is_none());
        assert_eq!(
            prompt
                .observe(Trigger::Spent(&spent(12, 4)))
                .unwrap()
                .detail,
            "budget: 12 prompt tokens read ≥ 12"
        );
        assert!(completion.observe(Trigger::Spent(&spent(12, 4))).is_none());
        // Restored, the run's spend is handed back and counting carries on.
        let mut again = StopTracker::new(StopCondition::completion_tokens(5));
        again.restore(completion.state());
        again.set_spent(spent(12, 4));
        assert_eq!(
            again.observe(Trigger::Spent(&spent(18, 6))).unwrap().detail,
            "budget: 6 completion tokens written ≥ 5"
        );
        assert_eq!(
            StopCondition::parse("prompt_tokens(3) | completion_tokens(4)")
                .unwrap()
                .to_string(),
            "prompt_tokens(3) | completion_tokens(4)"
        );
    }

    #[test]
    fn budgets_of_cost_model_calls_and_tool_calls_name_themselves() {
        let mut t = StopTracker::new(
            StopCondition::max_cost(0.5)
                | StopCondition::max_model_calls(9)
                | StopCondition::max_tool_calls(9),
        );
        let mut s = spent(1, 1);
        s.cost = Some(0.25);
        assert!(t.observe(Trigger::Spent(&s)).is_none());
        s.cost = Some(0.52);
        let r = t.observe(Trigger::Spent(&s)).unwrap();
        assert_eq!(r.condition, "max_cost(0.5)");
        assert_eq!(r.detail, "budget: cost 0.5200 USD ≥ 0.5");
        let mut t = StopTracker::new(StopCondition::max_model_calls(2));
        assert!(t.observe(Trigger::Spent(&spent(1, 1))).is_none());
        let two = AgentStats {
            model_calls: 2,
            ..AgentStats::default()
        };
        assert_eq!(
            t.observe(Trigger::Spent(&two)).unwrap().detail,
            "budget: 2 model calls ≥ 2"
        );
        let mut t = StopTracker::new(StopCondition::max_tool_calls(1));
        let one = AgentStats {
            tool_calls: 1,
            ..AgentStats::default()
        };
        assert_eq!(
            t.observe(Trigger::Spent(&one)).unwrap().detail,
            "budget: 1 tool calls ≥ 1"
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
