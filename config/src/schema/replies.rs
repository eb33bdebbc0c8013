//! Scripted replies (`replies:` on a model, `script:` on an agent): a
//! string, or one of the long forms.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shorthand::{ShortForm, Shorthand};

/// One tool call in a scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The tool's name.
    pub name: String,
    /// Its arguments (a mapping).
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// A scripted handoff.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffReplySpec {
    /// The agent to hand off to (or `user`).
    pub to: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The long form of a scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ReplyForm")]
pub enum ReplyForm {
    /// A text answer.
    Text(String),
    /// One tool call.
    ToolCall(ToolCallSpec),
    /// Several tool calls in one answer.
    ToolCalls(Vec<ToolCallSpec>),
    /// A handoff (a call of the `transfer_to_<agent>` tool).
    Handoff(HandoffReplySpec),
    /// Structured output: any value, sent as JSON text.
    Structured(serde_json::Value),
    /// A failed model call with this message.
    Error(String),
}

impl ShortForm for ReplyForm {
    type Long = ReplyForm;
    const NAME: &'static str = "Reply";
    const SHORT: &'static str = "A text answer.";
    const EXPECTING: &'static str = "a text reply, or one of `text`, `tool_call`, `tool_calls`, `handoff`, `structured`, `error`";
    fn from_short(text: &str) -> Self {
        ReplyForm::Text(text.to_string())
    }
    fn from_long(long: ReplyForm) -> Self {
        long
    }
}

/// A scripted reply: a string (a text answer) or one of the long forms.
pub type ReplySpec = Shorthand<ReplyForm>;
