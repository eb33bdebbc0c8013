//! [`Condition`]: when a transition fires, judged on what its source produced.

use std::fmt;
use std::sync::Arc;

use crate::message::{Content, Message};
use crate::state::StateSnapshot;

/// A closure judging the messages of one turn.
pub type TurnPredicate = Arc<dyn Fn(&[Arc<Message>]) -> bool + Send + Sync>;

/// A closure judging one turn with the run's state as the turn's reply
/// left it.
pub type StatePredicate = Arc<dyn Fn(&StateSnapshot, &[Arc<Message>]) -> bool + Send + Sync>;

/// A predicate on the messages a node produced in one turn.
///
/// Text, regex, field and handoff conditions look at the node's response
/// (its last message); `tool_called` looks at every message of the turn.
/// Combine with [`Condition::any`], [`Condition::all`], [`Condition::not`]
/// or the `|`, `&` and `!` operators; they nest.
///
/// ```
/// use troupe_runtime::{graph::Condition, Message};
/// use std::sync::Arc;
///
/// let approve = Condition::text_contains("APPROVE") & !Condition::text_contains("REJECT");
/// let turn = [Arc::new(Message::text("qa", "APPROVE: reads well"))];
/// assert!(approve.evaluate("qa", &turn));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Condition {
    /// Always holds.
    Always,
    /// Holds when no other conditional transition of the same node fired:
    /// the default branch.
    Otherwise,
    /// The response contains this text.
    TextContains(String),
    /// The response matches this regular expression.
    Regex(regex::Regex),
    /// The response hands off to this target.
    HandoffTo(String),
    /// The node is this one (useful in conditions shared between edges).
    SourceIs(String),
    /// The response, read as JSON, has this value at this JSON pointer
    /// (value kept as JSON text).
    FieldEquals {
        /// A JSON pointer such as `/verdict`.
        pointer: String,
        /// The expected value, as JSON text (`"\"yes\""`, `3`, `true`).
        value: String,
    },
    /// The turn called this tool.
    ToolCalled(String),
    /// The node chose this one to run next ([`Reply::select`](crate::Reply::select)).
    Selected(String),
    /// The response is of this type: its structured output's schema name
    /// (the [`SCHEMA_KEY`] metadata), or its content kind (`text`,
    /// `structured`, `tool_calls`, `tool_results`, `handoff`, `stop`).
    TypeIs(String),
    /// A named closure over the turn's messages.
    Fn(String, TurnPredicate),
    /// A named closure over the run's state (with the turn's changes
    /// applied) and the turn's messages.
    StateFn(String, StatePredicate),
    /// Any of these holds.
    Any(Vec<Condition>),
    /// All of these hold.
    All(Vec<Condition>),
    /// This does not hold.
    Not(Box<Condition>),
}

impl Condition {
    /// Always holds.
    pub fn always() -> Self {
        Condition::Always
    }
    /// The default branch: holds when no other conditional transition of
    /// the node fired.
    pub fn otherwise() -> Self {
        Condition::Otherwise
    }
    /// The response contains `text`.
    pub fn text_contains(text: impl Into<String>) -> Self {
        Condition::TextContains(text.into())
    }
    /// The response matches `pattern`.
    pub fn regex(pattern: &str) -> Result<Self, regex::Error> {
        Ok(Condition::Regex(regex::Regex::new(pattern)?))
    }
    /// The response hands off to `target`.
    pub fn handoff_to(target: impl Into<String>) -> Self {
        Condition::HandoffTo(target.into())
    }
    /// The producing node is `name`.
    pub fn source_is(name: impl Into<String>) -> Self {
        Condition::SourceIs(name.into())
    }
    /// The response's JSON has `value` at `pointer`.
    pub fn field_equals(pointer: impl Into<String>, value: &serde_json::Value) -> Self {
        Condition::FieldEquals {
            pointer: pointer.into(),
            value: value.to_string(),
        }
    }
    /// The node chose `name` to run next.
    pub fn selected(name: impl Into<String>) -> Self {
        Condition::Selected(name.into())
    }
    /// The response is of type `name`: a structured output's schema name
    /// or a content kind (see [`Condition::TypeIs`]).
    pub fn type_is(name: impl Into<String>) -> Self {
        Condition::TypeIs(name.into())
    }
    /// The turn called the tool `name`.
    pub fn tool_called(name: impl Into<String>) -> Self {
        Condition::ToolCalled(name.into())
    }
    /// A named closure over the turn's messages.
    pub fn func(
        name: impl Into<String>,
        f: impl Fn(&[Arc<Message>]) -> bool + Send + Sync + 'static,
    ) -> Self {
        Condition::Fn(name.into(), Arc::new(f))
    }
    /// A named closure over the run's state — as the turn's reply left it
    /// (see [`Reply::with_state`](crate::Reply::with_state)) — and the
    /// turn's messages.
    ///
    /// ```
    /// use troupe_runtime::{graph::Condition, state::StateSnapshot};
    ///
    /// let approved = Condition::state_func("approved", |state, _turn| state.get("qa.verdict") == Some("yes"));
    /// let state: StateSnapshot = [("qa.verdict", "yes")].into_iter().collect();
    /// assert!(approved.evaluate_with_state("qa", &[], None, &state));
    /// assert!(!approved.evaluate("qa", &[])); // no state: empty
    /// ```
    pub fn state_func(
        name: impl Into<String>,
        f: impl Fn(&StateSnapshot, &[Arc<Message>]) -> bool + Send + Sync + 'static,
    ) -> Self {
        Condition::StateFn(name.into(), Arc::new(f))
    }
    /// Any of `conditions` holds.
    pub fn any(conditions: impl IntoIterator<Item = Condition>) -> Self {
        Condition::Any(conditions.into_iter().collect())
    }
    /// All of `conditions` hold.
    pub fn all(conditions: impl IntoIterator<Item = Condition>) -> Self {
        Condition::All(conditions.into_iter().collect())
    }
    /// `condition` does not hold.
    #[allow(clippy::should_implement_trait)]
    pub fn not(condition: Condition) -> Self {
        Condition::Not(Box::new(condition))
    }

    /// Whether the transition fires unconditionally.
    pub fn is_always(&self) -> bool {
        matches!(self, Condition::Always)
    }

    /// Whether this is the default branch.
    pub fn is_otherwise(&self) -> bool {
        matches!(self, Condition::Otherwise)
    }

    /// Judges a turn of node `source` that produced `messages` (and chose
    /// no next node). `Otherwise` is decided by the graph, not here: alone it
    /// is false.
    pub fn evaluate(&self, source: &str, messages: &[Arc<Message>]) -> bool {
        self.evaluate_turn(source, messages, None)
    }

    /// Judges a turn that produced `messages` and chose `selected` to run
    /// next, with an empty run state.
    pub fn evaluate_turn(
        &self,
        source: &str,
        messages: &[Arc<Message>],
        selected: Option<&[String]>,
    ) -> bool {
        self.evaluate_with_state(source, messages, selected, &StateSnapshot::default())
    }

    /// Judges a turn that produced `messages` and chose `selected` to run
    /// next, the run's state then being `state` (what the workflow does).
    pub fn evaluate_with_state(
        &self,
        source: &str,
        messages: &[Arc<Message>],
        selected: Option<&[String]>,
        state: &StateSnapshot,
    ) -> bool {
        let last = messages.last();
        match self {
            Condition::Always => true,
            Condition::Otherwise => false,
            Condition::TextContains(t) => {
                last.is_some_and(|m| m.text_content().contains(t.as_str()))
            }
            Condition::Regex(r) => last.is_some_and(|m| r.is_match(&m.text_content())),
            Condition::HandoffTo(t) => last.is_some_and(|m| m.handoff_target() == Some(t.as_str())),
            Condition::SourceIs(s) => s == source,
            Condition::FieldEquals { pointer, value } => last.is_some_and(|m| {
                let (Ok(doc), Ok(expected)) = (
                    serde_json::from_str::<serde_json::Value>(&m.text_content()),
                    serde_json::from_str::<serde_json::Value>(value),
                ) else {
                    return false;
                };
                doc.pointer(pointer) == Some(&expected)
            }),
            Condition::ToolCalled(name) => messages.iter().any(|m| match &m.content {
                Content::ToolCalls(calls) => calls.iter().any(|c| &c.name == name),
                Content::ToolResults(results) => results.iter().any(|r| &r.name == name),
                _ => false,
            }),
            Condition::Selected(name) => selected.is_some_and(|s| s.contains(name)),
            Condition::TypeIs(name) => last.is_some_and(|m| {
                m.metadata.get(SCHEMA_KEY) == Some(name) || content_kind(&m.content) == name
            }),
            Condition::Fn(_, f) => f(messages),
            Condition::StateFn(_, f) => f(state, messages),
            Condition::Any(v) => v
                .iter()
                .any(|c| c.evaluate_with_state(source, messages, selected, state)),
            Condition::All(v) => v
                .iter()
                .all(|c| c.evaluate_with_state(source, messages, selected, state)),
            Condition::Not(c) => !c.evaluate_with_state(source, messages, selected, state),
        }
    }
}

/// The message metadata key under which an agent names the schema of its
/// structured output (what [`Condition::TypeIs`] matches first).
pub const SCHEMA_KEY: &str = "schema";

/// The kind of a message's content, as [`Condition::TypeIs`] names it.
pub fn content_kind(content: &Content) -> &'static str {
    match content {
        Content::Text(_) => "text",
        Content::Structured(_) => "structured",
        Content::ToolCalls(_) => "tool_calls",
        Content::ToolResults(_) => "tool_results",
        Content::Handoff(_) => "handoff",
        Content::Stop(_) => "stop",
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, name: &str, v: &[Condition]| {
            write!(f, "{name}(")?;
            for (i, c) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{c}")?;
            }
            f.write_str(")")
        };
        match self {
            Condition::Always => f.write_str("always"),
            Condition::Otherwise => f.write_str("otherwise"),
            Condition::TextContains(t) => write!(f, "text_contains({t:?})"),
            Condition::Regex(r) => write!(f, "regex({:?})", r.as_str()),
            Condition::HandoffTo(t) => write!(f, "handoff_to({t})"),
            Condition::SourceIs(s) => write!(f, "source_is({s})"),
            Condition::FieldEquals { pointer, value } => {
                write!(f, "field_equals({pointer} = {value})")
            }
            Condition::ToolCalled(n) => write!(f, "tool_called({n})"),
            Condition::Selected(n) => write!(f, "selected({n})"),
            Condition::TypeIs(n) => write!(f, "type_is({n})"),
            Condition::Fn(n, _) | Condition::StateFn(n, _) => write!(f, "fn({n})"),
            Condition::Any(v) => list(f, "any", v),
            Condition::All(v) => list(f, "all", v),
            Condition::Not(c) => write!(f, "not({c})"),
        }
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condition({self})")
    }
}

impl std::ops::BitOr for Condition {
    type Output = Condition;
    fn bitor(self, rhs: Condition) -> Condition {
        match self {
            Condition::Any(mut v) => {
                v.push(rhs);
                Condition::Any(v)
            }
            lhs => Condition::Any(vec![lhs, rhs]),
        }
    }
}

impl std::ops::BitAnd for Condition {
    type Output = Condition;
    fn bitand(self, rhs: Condition) -> Condition {
        match self {
            Condition::All(mut v) => {
                v.push(rhs);
                Condition::All(v)
            }
            lhs => Condition::All(vec![lhs, rhs]),
        }
    }
}

impl std::ops::Not for Condition {
    type Output = Condition;
    fn not(self) -> Condition {
        Condition::Not(Box::new(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn turn(ms: Vec<Message>) -> Vec<Arc<Message>> {
        ms.into_iter().map(Arc::new).collect()
    }

    #[test]
    fn type_is_matches_the_schema_name_then_the_content_kind() {
        let refund = turn(vec![
            Message::structured("a", "{}").with_metadata(SCHEMA_KEY, "Refund"),
        ]);
        assert!(Condition::type_is("Refund").evaluate("a", &refund));
        assert!(Condition::type_is("structured").evaluate("a", &refund));
        assert!(!Condition::type_is("Complaint").evaluate("a", &refund));
        let text = turn(vec![Message::text("a", "Refund")]);
        assert!(Condition::type_is("text").evaluate("a", &text));
        assert!(!Condition::type_is("Refund").evaluate("a", &text));
    }

    #[test]
    fn each_predicate() {
        let t = turn(vec![
            Message::new(
                "a",
                Content::ToolCalls(vec![ToolCall {
                    id: "1".into(),
                    name: "search".into(),
                    arguments: "{}".into(),
                }]),
            ),
            Message::structured("a", r#"{"verdict":"yes","score":3}"#),
        ]);
        assert!(Condition::tool_called("search").evaluate("a", &t));
        assert!(!Condition::tool_called("other").evaluate("a", &t));
        assert!(Condition::field_equals("/verdict", &serde_json::json!("yes")).evaluate("a", &t));
        assert!(Condition::field_equals("/score", &serde_json::json!(3)).evaluate("a", &t));
        assert!(!Condition::field_equals("/score", &serde_json::json!(4)).evaluate("a", &t));
        assert!(Condition::regex(r#""score":\d"#).unwrap().evaluate("a", &t));
        assert!(Condition::regex("(").is_err());
        assert!(Condition::source_is("a").evaluate("a", &t));
        let h = turn(vec![Message::handoff("a", "b", "go")]);
        assert!(Condition::handoff_to("b").evaluate("a", &h));
        assert!(!Condition::text_contains("x").evaluate("a", &[]));
        assert!(Condition::func("two", |m| m.len() == 2).evaluate("a", &t));
    }

    #[test]
    fn combinators_nest() {
        let t = turn(vec![Message::text("qa", "REJECT: too long")]);
        let c = Condition::any([
            Condition::all([
                Condition::text_contains("REJECT"),
                Condition::source_is("qa"),
            ]),
            Condition::text_contains("nope"),
        ]);
        assert!(c.evaluate("qa", &t));
        assert!(!(!c.clone()).evaluate("qa", &t));
        assert_eq!(
            (Condition::text_contains("a") | Condition::always()).to_string(),
            "any(text_contains(\"a\"), always)"
        );
    }
}
