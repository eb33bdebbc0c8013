//! `stop:`: when a run stops — an expression (`"max_messages(10) |
//! text_mention(APPROVE)"`) or a mapping of conditions.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::HumanDuration;
use crate::shorthand::{ShortForm, Shorthand};

/// A stop condition as written: an expression, or a mapping.
#[derive(Debug, Clone, PartialEq)]
pub enum StopForm {
    /// The expression syntax: kinds such as `max_messages(10)`,
    /// `text_mention(APPROVE from critic)`, `stop_message`, combined with
    /// `|` (any), `&` (all, binds tighter) and parentheses.
    Expr(String),
    /// The mapping form.
    Fields(Box<StopFields>),
}

impl ShortForm for StopForm {
    type Long = StopFields;
    const NAME: &'static str = "Stop";
    const SHORT: &'static str = "A stop expression such as `max_messages(10) | text_mention(APPROVE)`: \
max_messages(N), max_turns(N), token_budget(N), prompt_tokens(N), completion_tokens(N), max_cost(USD), max_model_calls(N), max_tool_calls(N), timeout(DURATION), text_mention(TEXT [from SOURCE, ...]), \
text_message[(SOURCE, ...)], source_match(SOURCE, ...), handoff(TARGET), stop_message, function_call(TOOL); \
`|` is any, `&` is all (binds tighter), parentheses group.";
    const EXPECTING: &'static str = "a stop expression such as `max_messages(10) | text_mention(APPROVE)`, or a mapping of stop conditions";
    fn from_short(text: &str) -> Self {
        StopForm::Expr(text.to_string())
    }
    fn from_long(long: StopFields) -> Self {
        StopForm::Fields(Box::new(long))
    }
}

/// When a run stops: an expression or a mapping.
pub type StopSpec = Shorthand<StopForm>;

/// When a run stops, as a mapping. Every condition given counts (any of
/// them stops the run); `all` lists conditions that must all have held.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopFields {
    /// After this many messages (inputs included).
    #[serde(default)]
    pub max_messages: Option<u64>,
    /// After this many agent turns.
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// When a produced message contains this text.
    #[serde(default)]
    pub text_mention: Option<String>,
    /// When one of these produces a message.
    #[serde(default)]
    pub source_match: Option<Vec<String>>,
    /// When one of these produces a plain text message (tool calls,
    /// handoffs and structured output do not count).
    #[serde(default)]
    pub text_message: Option<Vec<String>>,
    /// When a message hands off to this target (e.g. `user`).
    #[serde(default)]
    pub handoff: Option<String>,
    /// `true`: when an agent replies with a stop message.
    #[serde(default)]
    pub stop_message: Option<bool>,
    /// When this tool (function) is called.
    #[serde(default)]
    pub function_call: Option<String>,
    /// When the run has spent this many tokens (prompt and completion).
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// When the run's model calls have read this many prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// When the run's model calls have written this many completion
    /// tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// A budget: when the run's model calls have cost this many USD
    /// (models with `pricing:`), counted as turns end.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// A budget: after this many model calls, counted as turns end.
    #[serde(default)]
    pub max_model_calls: Option<u64>,
    /// A budget: after this many tool calls, counted as turns end.
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    /// When the run has lasted this long (`30s`, `5m`).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Conditions that must all have held.
    #[serde(default)]
    pub all: Option<Vec<StopSpec>>,
    /// Conditions any of which stops the run.
    #[serde(default)]
    pub any: Option<Vec<StopSpec>>,
}
