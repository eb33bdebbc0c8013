//! Conditions of graph transitions and condition steps: `always`,
//! `otherwise`, a template expression, or one of the long forms.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shorthand::{ShortForm, Shorthand};

/// A field of a JSON answer compared with a value.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// The field: a dotted path (`verdict.ok`) or a JSON pointer
    /// (`/verdict/ok`).
    pub path: String,
    /// The value it must equal.
    pub equals: serde_json::Value,
}

/// The long form of a condition.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ConditionForm")]
pub enum ConditionForm {
    /// Always holds.
    Always,
    /// Holds when no other conditional transition of the node fired.
    Otherwise,
    /// A template expression: `{{ $steps.qa.output.approved }}` (true
    /// when the value is truthy) or `{{ … }} == value` / `!= value`.
    Expr(String),
    /// The response contains this text.
    Contains(String),
    /// The response matches this regular expression.
    Regex(String),
    /// The response hands off to this agent (or `user`).
    HandoffTo(String),
    /// The response comes from this node.
    Source(String),
    /// A field of the response (read as JSON) equals a value.
    Field(FieldSpec),
    /// The turn called this tool.
    ToolCalled(String),
    /// The response is of this type: its structured output's schema name
    /// (the schema's `title`, else `output`) or its content kind (`text`,
    /// `structured`, `tool_calls`, `tool_results`, `handoff`, `stop`).
    Type(String),
    /// Any of these holds.
    Any(Vec<ConditionSpec>),
    /// All of these hold.
    All(Vec<ConditionSpec>),
    /// This does not hold.
    Not(Box<ConditionSpec>),
}

impl ShortForm for ConditionForm {
    type Long = ConditionForm;
    const NAME: &'static str = "Condition";
    const SHORT: &'static str = "`always`, `otherwise`, or a template expression such as `{{ $steps.qa.output.approved }}`.";
    const EXPECTING: &'static str = "a condition: `always`, `otherwise`, a `{{ … }}` expression, or one of `contains`, `regex`, `handoff_to`, `source`, `field`, `tool_called`, `type`, `expr`, `any`, `all`, `not`";
    fn from_short(text: &str) -> Self {
        match text.trim() {
            "always" => ConditionForm::Always,
            "otherwise" => ConditionForm::Otherwise,
            _ => ConditionForm::Expr(text.to_string()),
        }
    }
    fn from_long(long: ConditionForm) -> Self {
        long
    }
}

/// A condition: `always`, `otherwise`, a template expression string, or one
/// of the long forms.
pub type ConditionSpec = Shorthand<ConditionForm>;
