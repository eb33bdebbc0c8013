//! Stop conditions: when a run should end although agents could go on.

//!
//! One file per topic: the condition and its combinators here, the
//! caller's handle (`handle.rs`), the expression syntax YAML writes
//! (`parse.rs`), and the per-run tracker that judges it (`tracker.rs`).
//! Together they cover AutoGen's eleven termination conditions; see
//! [`StopCondition`] for the mapping.

mod handle;
mod parse;
mod tracker;
mod tracker_state;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::message::Message;

pub use handle::StopHandle;
pub use parse::{ParseStopError, STOP_KINDS};
pub(crate) use tracker::{StopTracker, Trigger};
pub(crate) use tracker_state::TrackerState;

/// When a run stops. Combine with `|` (any) and `&` (all).
///
/// Content conditions (text mention, source, handoff, custom) look at the
/// messages agents produce; counting conditions (max messages, token budget)
/// count the run's input messages too, as AutoGen does.
///
/// Budgets — tokens ([`TokenBudget`], [`PromptTokens`],
/// [`CompletionTokens`]), cost ([`MaxCost`]), model calls
/// ([`MaxModelCalls`]) and tool calls ([`MaxToolCalls`]) — judge what the
/// run's turns spent ([`RunStats`](crate::stats::RunStats): a nested workflow's
/// and failed turns' spend included) when each turn ends, and end the run
/// as [`Stopped`](crate::RunStatus::Stopped) with a reason naming the
/// budget. Token budgets also count the usage carried by input messages.
///
/// AutoGen's conditions: `MaxMessageTermination` is [`MaxMessages`],
/// `TextMentionTermination` [`TextMention`], `StopMessageTermination`
/// [`StopMessage`], `FunctionCallTermination` [`FunctionCall`],
/// `TextMessageTermination` [`TextMessage`], `SourceMatchTermination`
/// [`SourceMatch`], `HandoffTermination` [`Handoff`],
/// `TokenUsageTermination` [`TokenBudget`] (total tokens), [`PromptTokens`]
/// and [`CompletionTokens`] (its `max_prompt_token` and
/// `max_completion_token`; combine them with `|` as AutoGen does in one),
/// `TimeoutTermination` [`Timeout`], `ExternalTermination` [`External`],
/// `FunctionalTermination` [`Custom`].
///
/// A condition also reads from the expression syntax YAML writes (its
/// [`Display`](fmt::Display) form): `"max_messages(10) | text_mention(APPROVE)"`
/// (see [`StopCondition::parse`]).
///
/// [`MaxMessages`]: StopCondition::MaxMessages
/// [`TextMention`]: StopCondition::TextMention
/// [`StopMessage`]: StopCondition::StopMessage
/// [`FunctionCall`]: StopCondition::FunctionCall
/// [`TextMessage`]: StopCondition::TextMessage
/// [`SourceMatch`]: StopCondition::SourceMatch
/// [`Handoff`]: StopCondition::Handoff
/// [`TokenBudget`]: StopCondition::TokenBudget
/// [`PromptTokens`]: StopCondition::PromptTokens
/// [`CompletionTokens`]: StopCondition::CompletionTokens
/// [`Timeout`]: StopCondition::Timeout
/// [`MaxCost`]: StopCondition::MaxCost
/// [`MaxModelCalls`]: StopCondition::MaxModelCalls
/// [`MaxToolCalls`]: StopCondition::MaxToolCalls
/// [`External`]: StopCondition::External
/// [`Custom`]: StopCondition::Custom
///
/// ```
/// use std::time::Duration;
/// use troupe_runtime::StopCondition;
///
/// let stop = StopCondition::text_mention("TERMINATE")
///     | StopCondition::max_messages(20)
///     | StopCondition::timeout(Duration::from_secs(60));
/// assert_eq!(stop.to_string(), "text_mention(\"TERMINATE\") | max_messages(20) | timeout(1m)");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum StopCondition {
    /// After this many messages in the run (inputs included).
    MaxMessages(u64),
    /// When a produced message's text contains `text` (optionally only from
    /// the given sources).
    TextMention {
        /// The text to look for.
        text: String,
        /// Only messages from these sources count; `None` for any.
        sources: Option<Vec<String>>,
    },
    /// When any of these sources produces a message.
    SourceMatch(Vec<String>),
    /// When an agent replies with a stop message ([`Content::Stop`](crate::Content::Stop)).
    StopMessage,
    /// When a tool (function) of this name is called: a produced message
    /// requests it or carries its result.
    FunctionCall(String),
    /// When a plain text message is produced (optionally only by the given
    /// sources) — tool calls, handoffs, structured output do not count.
    TextMessage(Option<Vec<String>>),
    /// When a message hands off to this target (for example `user`).
    Handoff(String),
    /// When the run has spent this many tokens (prompt and completion).
    TokenBudget(u64),
    /// When the run's model calls have read this many prompt tokens.
    PromptTokens(u64),
    /// When the run's model calls have written this many completion
    /// tokens.
    CompletionTokens(u64),
    /// After this many agent turns.
    MaxTurns(u64),
    /// A ceiling on the run's turns that the caller did not write as a
    /// stop condition (a default, such as the config's per-kind turn
    /// ceiling): after `turns` agent turns, with a reason that says so
    /// and how to raise it (`advice`).
    TurnCeiling {
        /// The most turns the run takes.
        turns: u64,
        /// How to raise the ceiling, said in the reason
        /// (`raise it with max_turns: N`).
        advice: String,
    },
    /// A budget: when the run's model calls have cost this many USD
    /// (priced models only: `pricing:`), counted as turns end.
    MaxCost(f64),
    /// A budget: after this many model calls, counted as turns end.
    MaxModelCalls(u64),
    /// A budget: after this many tool calls, counted as turns end.
    MaxToolCalls(u64),
    /// When the run has lasted this long; fires during a long turn too,
    /// cancelling turns under way.
    Timeout(Duration),
    /// When the caller sets the handle.
    External(StopHandle),
    /// When the function says so of a produced message.
    Custom(String, Arc<dyn Fn(&Message) -> bool + Send + Sync>),
    /// When any of these holds.
    Any(Vec<StopCondition>),
    /// When all of these have held (each at some point of the run).
    All(Vec<StopCondition>),
}

impl StopCondition {
    /// Stop after `n` messages.
    pub fn max_messages(n: u64) -> Self {
        StopCondition::MaxMessages(n)
    }
    /// Stop when a produced message mentions `text`.
    pub fn text_mention(text: impl Into<String>) -> Self {
        StopCondition::TextMention {
            text: text.into(),
            sources: None,
        }
    }
    /// Stop when one of `sources` produces a message mentioning `text`.
    pub fn text_mention_from<S: Into<String>>(
        text: impl Into<String>,
        sources: impl IntoIterator<Item = S>,
    ) -> Self {
        StopCondition::TextMention {
            text: text.into(),
            sources: Some(sources.into_iter().map(Into::into).collect()),
        }
    }
    /// Stop when one of `sources` produces a message.
    pub fn source_match<S: Into<String>>(sources: impl IntoIterator<Item = S>) -> Self {
        StopCondition::SourceMatch(sources.into_iter().map(Into::into).collect())
    }
    /// Stop when an agent replies with a stop message.
    pub fn stop_message() -> Self {
        StopCondition::StopMessage
    }
    /// Stop when the tool (function) `name` is called.
    pub fn function_call(name: impl Into<String>) -> Self {
        StopCondition::FunctionCall(name.into())
    }
    /// Stop when any agent produces a plain text message.
    pub fn text_message() -> Self {
        StopCondition::TextMessage(None)
    }
    /// Stop when one of `sources` produces a plain text message.
    pub fn text_message_from<S: Into<String>>(sources: impl IntoIterator<Item = S>) -> Self {
        StopCondition::TextMessage(Some(sources.into_iter().map(Into::into).collect()))
    }
    /// Stop on a handoff to `target`.
    pub fn handoff(target: impl Into<String>) -> Self {
        StopCondition::Handoff(target.into())
    }
    /// Stop once `tokens` have been spent.
    pub fn token_budget(tokens: u64) -> Self {
        StopCondition::TokenBudget(tokens)
    }
    /// Stop once the model calls have read `tokens` prompt tokens.
    pub fn prompt_tokens(tokens: u64) -> Self {
        StopCondition::PromptTokens(tokens)
    }
    /// Stop once the model calls have written `tokens` completion tokens.
    pub fn completion_tokens(tokens: u64) -> Self {
        StopCondition::CompletionTokens(tokens)
    }
    /// Stop after `n` turns.
    pub fn max_turns(n: u64) -> Self {
        StopCondition::MaxTurns(n)
    }
    /// Stop after `turns` turns as a ceiling the caller did not choose,
    /// the reason naming it and saying how to raise it (`advice`).
    pub fn turn_ceiling(turns: u64, advice: impl Into<String>) -> Self {
        StopCondition::TurnCeiling {
            turns,
            advice: advice.into(),
        }
    }
    /// Whether the condition bounds the run's turns anywhere
    /// (`max_turns` or a ceiling), alone or as one of several.
    pub fn bounds_turns(&self) -> bool {
        match self {
            StopCondition::MaxTurns(_) | StopCondition::TurnCeiling { .. } => true,
            StopCondition::Any(v) => v.iter().any(Self::bounds_turns),
            StopCondition::All(v) => v.iter().all(Self::bounds_turns),
            _ => false,
        }
    }
    /// Stop once the model calls have cost `usd` (a budget).
    pub fn max_cost(usd: f64) -> Self {
        StopCondition::MaxCost(usd)
    }
    /// Stop after `n` model calls (a budget).
    pub fn max_model_calls(n: u64) -> Self {
        StopCondition::MaxModelCalls(n)
    }
    /// Stop after `n` tool calls (a budget).
    pub fn max_tool_calls(n: u64) -> Self {
        StopCondition::MaxToolCalls(n)
    }
    /// Stop after `d`.
    pub fn timeout(d: Duration) -> Self {
        StopCondition::Timeout(d)
    }
    /// Stop after a humantime duration such as `"30s"` or `"1h"`.
    pub fn timeout_str(s: &str) -> Result<Self, humantime::DurationError> {
        Ok(StopCondition::Timeout(humantime::parse_duration(s)?))
    }
    /// Stop when `handle` is set.
    pub fn external(handle: &StopHandle) -> Self {
        StopCondition::External(handle.clone())
    }
    /// Stop when `f` holds for a produced message.
    pub fn custom(
        name: impl Into<String>,
        f: impl Fn(&Message) -> bool + Send + Sync + 'static,
    ) -> Self {
        StopCondition::Custom(name.into(), Arc::new(f))
    }

    /// The shortest timeout anywhere in the condition.
    pub(crate) fn shortest_timeout(&self) -> Option<Duration> {
        match self {
            StopCondition::Timeout(d) => Some(*d),
            StopCondition::Any(v) | StopCondition::All(v) => {
                v.iter().filter_map(|c| c.shortest_timeout()).min()
            }
            _ => None,
        }
    }

    /// Every external handle in the condition.
    pub(crate) fn external_handles(&self, out: &mut Vec<StopHandle>) {
        match self {
            StopCondition::External(h) => out.push(h.clone()),
            StopCondition::Any(v) | StopCondition::All(v) => {
                v.iter().for_each(|c| c.external_handles(out))
            }
            _ => {}
        }
    }

    /// Whether the condition reads what turns spend (tokens, cost, model
    /// or tool calls): only then is it judged again when a turn's spend
    /// is counted.
    pub(crate) fn reads_spend(&self) -> bool {
        match self {
            StopCondition::Any(v) | StopCondition::All(v) => v.iter().any(Self::reads_spend),
            StopCondition::TokenBudget(_)
            | StopCondition::PromptTokens(_)
            | StopCondition::CompletionTokens(_)
            | StopCondition::MaxCost(_)
            | StopCondition::MaxModelCalls(_)
            | StopCondition::MaxToolCalls(_) => true,
            _ => false,
        }
    }

    pub(crate) fn node_count(&self) -> usize {
        match self {
            StopCondition::Any(v) | StopCondition::All(v) => {
                1 + v.iter().map(|c| c.node_count()).sum::<usize>()
            }
            _ => 1,
        }
    }
}

impl fmt::Display for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, v: &[StopCondition], op: &str| {
            for (i, c) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                match c {
                    StopCondition::Any(_) | StopCondition::All(_) => write!(f, "({c})")?,
                    _ => write!(f, "{c}")?,
                }
            }
            Ok(())
        };
        match self {
            StopCondition::MaxMessages(n) => write!(f, "max_messages({n})"),
            StopCondition::TextMention { text, sources } => match sources {
                None => write!(f, "text_mention({text:?})"),
                Some(s) => write!(f, "text_mention({text:?} from {})", s.join(", ")),
            },
            StopCondition::SourceMatch(s) => write!(f, "source_match({})", s.join(", ")),
            StopCondition::StopMessage => write!(f, "stop_message"),
            StopCondition::FunctionCall(name) => write!(f, "function_call({name})"),
            StopCondition::TextMessage(None) => write!(f, "text_message"),
            StopCondition::TextMessage(Some(s)) => write!(f, "text_message({})", s.join(", ")),
            StopCondition::Handoff(t) => write!(f, "handoff({t})"),
            StopCondition::TokenBudget(n) => write!(f, "token_budget({n})"),
            StopCondition::PromptTokens(n) => write!(f, "prompt_tokens({n})"),
            StopCondition::CompletionTokens(n) => write!(f, "completion_tokens({n})"),
            StopCondition::MaxTurns(n) => write!(f, "max_turns({n})"),
            StopCondition::TurnCeiling { turns, .. } => write!(f, "turn_ceiling({turns})"),
            StopCondition::MaxCost(usd) => write!(f, "max_cost({usd})"),
            StopCondition::MaxModelCalls(n) => write!(f, "max_model_calls({n})"),
            StopCondition::MaxToolCalls(n) => write!(f, "max_tool_calls({n})"),
            StopCondition::Timeout(d) => write!(f, "timeout({})", humantime::format_duration(*d)),
            StopCondition::External(_) => write!(f, "external"),
            StopCondition::Custom(name, _) => write!(f, "custom({name})"),
            StopCondition::Any(v) => join(f, v, "|"),
            StopCondition::All(v) => join(f, v, "&"),
        }
    }
}

impl fmt::Debug for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StopCondition({self})")
    }
}

impl std::ops::BitOr for StopCondition {
    type Output = StopCondition;
    fn bitor(self, rhs: StopCondition) -> StopCondition {
        match (self, rhs) {
            (StopCondition::Any(mut a), StopCondition::Any(b)) => {
                a.extend(b);
                StopCondition::Any(a)
            }
            (StopCondition::Any(mut a), c) => {
                a.push(c);
                StopCondition::Any(a)
            }
            (c, StopCondition::Any(mut b)) => {
                b.insert(0, c);
                StopCondition::Any(b)
            }
            (a, b) => StopCondition::Any(vec![a, b]),
        }
    }
}

impl std::ops::BitAnd for StopCondition {
    type Output = StopCondition;
    fn bitand(self, rhs: StopCondition) -> StopCondition {
        match (self, rhs) {
            (StopCondition::All(mut a), StopCondition::All(b)) => {
                a.extend(b);
                StopCondition::All(a)
            }
            (StopCondition::All(mut a), c) => {
                a.push(c);
                StopCondition::All(a)
            }
            (c, StopCondition::All(mut b)) => {
                b.insert(0, c);
                StopCondition::All(b)
            }
            (a, b) => StopCondition::All(vec![a, b]),
        }
    }
}

/// Which condition stopped a run, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StopReason {
    /// The condition that held, as written (`max_messages(10)`).
    pub condition: String,
    /// What made it hold.
    pub detail: String,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.condition, self.detail)
    }
}
