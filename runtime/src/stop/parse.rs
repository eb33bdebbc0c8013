//! The expression syntax of stop conditions, as YAML writes them and as
//! [`StopCondition`]'s `Display` prints them:
//! `max_messages(10) | (text_mention(APPROVE) & source_match(critic))`.
//!
//! `|` is "any", `&` is "all" and binds tighter; parentheses group. An
//! argument is bare text (trimmed) or a double-quoted string (with `\"`,
//! `\\`, `\n`, `\t` escapes) when it holds `,`, `(`, `)` or quotes.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::{StopCondition, StopHandle};

/// Why a stop expression does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseStopError {
    /// Where the problem is: a character offset into the expression, from 0.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseStopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.offset + 1, self.message)
    }
}

impl std::error::Error for ParseStopError {}

/// Every kind the syntax knows.
pub const STOP_KINDS: &str = "max_messages(N), max_turns(N), token_budget(N), prompt_tokens(N), \
completion_tokens(N), max_cost(USD), max_model_calls(N), max_tool_calls(N), timeout(DURATION), \
text_mention(TEXT [from SOURCE, ...]), text_message[(SOURCE, ...)], source_match(SOURCE, ...), \
handoff(TARGET), stop_message, function_call(TOOL), external";

impl StopCondition {
    /// Reads a condition written in the expression syntax (the
    /// [`Display`](fmt::Display) form). `external` gets a fresh
    /// [`StopHandle`]; `custom(…)` (a Rust closure) has no text form.
    ///
    /// ```
    /// use troupe_runtime::StopCondition;
    ///
    /// let c = StopCondition::parse("max_messages(10) | text_mention(APPROVE) & source_match(critic)")?;
    /// assert_eq!(c.to_string(), "max_messages(10) | (text_mention(\"APPROVE\") & source_match(critic))");
    /// let e = StopCondition::parse("max_messages(10) | nope").unwrap_err();
    /// assert_eq!(e.offset, 19);
    /// # Ok::<(), troupe_runtime::stop::ParseStopError>(())
    /// ```
    pub fn parse(text: &str) -> Result<StopCondition, ParseStopError> {
        let mut p = Parser {
            chars: text.chars().collect(),
            at: 0,
            depth: 0,
        };
        let c = p.any()?;
        p.skip_ws();
        if p.at < p.chars.len() {
            return Err(p.error(p.at, "expected `|`, `&` or the end of the expression"));
        }
        Ok(c)
    }
}

impl FromStr for StopCondition {
    type Err = ParseStopError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StopCondition::parse(s)
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// Groups open around the current position.
    depth: usize,
}

/// How deeply groups may nest: far beyond what a person writes, far
/// below what would exhaust the stack.
const MAX_DEPTH: usize = 64;

/// One argument: its text and where it starts.
struct Arg {
    text: String,
    at: usize,
    quoted: bool,
    /// What follows a quoted string inside the same argument.
    rest: String,
    rest_at: usize,
}

impl Parser {
    fn error(&self, at: usize, message: impl Into<String>) -> ParseStopError {
        ParseStopError {
            offset: at,
            message: message.into(),
        }
    }

    fn skip_ws(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.chars.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn any(&mut self) -> Result<StopCondition, ParseStopError> {
        let mut c = self.all()?;
        while self.eat('|') {
            c = c | self.all()?;
        }
        Ok(c)
    }

    fn all(&mut self) -> Result<StopCondition, ParseStopError> {
        let mut c = self.atom()?;
        while self.eat('&') {
            c = c & self.atom()?;
        }
        Ok(c)
    }

    fn atom(&mut self) -> Result<StopCondition, ParseStopError> {
        self.skip_ws();
        let start = self.at;
        if self.eat('(') {
            if self.depth >= MAX_DEPTH {
                return Err(self.error(
                    start,
                    format!(
                        "groups nested more than {MAX_DEPTH} deep; write the expression flatter"
                    ),
                ));
            }
            self.depth += 1;
            // Regrouping `|` inside `|` (or `&` inside `&`) means the same.
            let inner = self.any();
            self.depth -= 1;
            let inner = inner?;
            if !self.eat(')') {
                return Err(self.error(self.at, "expected `)` closing the group"));
            }
            return Ok(inner);
        }
        while self
            .chars
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            self.at += 1;
        }
        if self.at == start {
            return Err(self.error(start, "expected a stop condition"));
        }
        let name: String = self.chars[start..self.at].iter().collect();
        let args = if self.eat('(') {
            Some(self.args()?)
        } else {
            None
        };
        self.kind(&name, start, args)
    }

    /// The arguments up to the closing `)` (the `(` is read).
    fn args(&mut self) -> Result<Vec<Arg>, ParseStopError> {
        let open = self.at - 1;
        let mut args = Vec::new();
        loop {
            self.skip_ws();
            let at = self.at;
            let mut arg = Arg {
                text: String::new(),
                at,
                quoted: false,
                rest: String::new(),
                rest_at: at,
            };
            if self.chars.get(self.at) == Some(&'"') {
                arg.quoted = true;
                arg.text = self.quoted()?;
                arg.rest_at = self.at;
            }
            let bare_start = self.at;
            while let Some(&c) = self.chars.get(self.at) {
                if c == ',' || c == ')' {
                    break;
                }
                if c == '(' || c == '"' {
                    return Err(self.error(
                        self.at,
                        format!("`{c}` inside an argument: write the argument in double quotes"),
                    ));
                }
                self.at += 1;
            }
            let bare: String = self.chars[bare_start..self.at].iter().collect();
            if arg.quoted {
                arg.rest = bare.trim().to_string();
                arg.rest_at = bare_start + (bare.len() - bare.trim_start().len());
            } else {
                arg.text = bare.trim().to_string();
            }
            match self.chars.get(self.at) {
                None => return Err(self.error(open, "this `(` is never closed")),
                Some(')') => {
                    self.at += 1;
                    if !(args.is_empty() && !arg.quoted && arg.text.is_empty()) {
                        args.push(arg);
                    }
                    return Ok(args);
                }
                _ => {
                    self.at += 1;
                    args.push(arg);
                }
            }
        }
    }

    /// A double-quoted string at `self.at`.
    fn quoted(&mut self) -> Result<String, ParseStopError> {
        let open = self.at;
        self.at += 1;
        let mut out = String::new();
        loop {
            match self.chars.get(self.at) {
                None => return Err(self.error(open, "this `\"` is never closed")),
                Some('"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    let c = match self.chars.get(self.at + 1) {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('n') => '\n',
                        Some('t') => '\t',
                        _ => {
                            return Err(self.error(
                                self.at,
                                "unknown escape: write `\\\"`, `\\\\`, `\\n` or `\\t`",
                            ));
                        }
                    };
                    out.push(c);
                    self.at += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn kind(
        &self,
        name: &str,
        at: usize,
        args: Option<Vec<Arg>>,
    ) -> Result<StopCondition, ParseStopError> {
        let args = args.unwrap_or_default();
        let one = |what: &str| -> Result<&Arg, ParseStopError> {
            match args.as_slice() {
                [a] if !a.text.is_empty() && a.rest.is_empty() => Ok(a),
                [a] if !a.rest.is_empty() => {
                    Err(self.error(a.rest_at, "unexpected text after the quoted string"))
                }
                [_, b, ..] => Err(self.error(b.at, format!("`{name}` takes one argument: {what}"))),
                _ => Err(self.error(
                    at,
                    format!("`{name}` needs {what}: `{name}({})`", what.to_uppercase()),
                )),
            }
        };
        let count = |what: &str| -> Result<u64, ParseStopError> {
            let a = one(what)?;
            match a.text.parse::<u64>() {
                Ok(0) => {
                    Err(self.error(a.at, format!("`{name}(0)` stops the run before it starts")))
                }
                Ok(n) => Ok(n),
                Err(_) => Err(self.error(
                    a.at,
                    format!("`{}` is not a whole number of at least 1", a.text),
                )),
            }
        };
        let names = |min: usize| -> Result<Vec<String>, ParseStopError> {
            if args.len() < min {
                return Err(self.error(
                    at,
                    format!("`{name}` needs at least one source: `{name}(agent, ...)`"),
                ));
            }
            args.iter().map(|a| self.name_arg(a)).collect()
        };
        let none = || -> Result<(), ParseStopError> {
            match args.first() {
                Some(a) => Err(self.error(a.at, format!("`{name}` takes no arguments"))),
                None => Ok(()),
            }
        };
        Ok(match name {
            "max_messages" => StopCondition::MaxMessages(count("a number of messages")?),
            "max_turns" => StopCondition::MaxTurns(count("a number of turns")?),
            "token_budget" => StopCondition::TokenBudget(count("a number of tokens")?),
            "prompt_tokens" => StopCondition::PromptTokens(count("a number of tokens")?),
            "completion_tokens" => StopCondition::CompletionTokens(count("a number of tokens")?),
            "max_model_calls" => StopCondition::MaxModelCalls(count("a number of model calls")?),
            "max_tool_calls" => StopCondition::MaxToolCalls(count("a number of tool calls")?),
            "max_cost" => {
                let a = one("an amount in USD such as 0.50")?;
                match a.text.trim_start_matches('$').parse::<f64>() {
                    Ok(usd) if usd.is_finite() && usd > 0.0 => StopCondition::MaxCost(usd),
                    _ => {
                        return Err(self.error(
                            a.at,
                            format!("`{}` is not an amount in USD above 0 (e.g. 0.50)", a.text),
                        ));
                    }
                }
            }
            "timeout" => {
                let a = one("a duration such as 30s")?;
                let d: Duration = humantime::parse_duration(&a.text).map_err(|e| {
                    self.error(
                        a.at,
                        format!(
                            "`{}` is not a duration ({e}); write e.g. `30s`, `5m`",
                            a.text
                        ),
                    )
                })?;
                StopCondition::Timeout(d)
            }
            "text_mention" => self.text_mention(at, &args)?,
            "text_message" if args.is_empty() => StopCondition::TextMessage(None),
            "text_message" => StopCondition::TextMessage(Some(names(1)?)),
            "source_match" => StopCondition::SourceMatch(names(1)?),
            "handoff" => StopCondition::Handoff(self.name_arg(one("a target")?)?),
            "function_call" => StopCondition::FunctionCall(self.name_arg(one("a tool name")?)?),
            "stop_message" => {
                none()?;
                StopCondition::StopMessage
            }
            "external" => {
                none()?;
                StopCondition::External(StopHandle::new())
            }
            "custom" | "functional" => {
                return Err(self.error(
                    at,
                    "a functional condition is a Rust closure (`StopCondition::custom`); it has no text form",
                ));
            }
            _ => {
                return Err(self.error(at, format!("unknown stop condition `{name}`")));
            }
        })
    }

    /// A source, target or tool name.
    fn name_arg(&self, a: &Arg) -> Result<String, ParseStopError> {
        if !a.rest.is_empty() {
            return Err(self.error(a.rest_at, "unexpected text after the quoted string"));
        }
        if a.text.is_empty() {
            return Err(self.error(a.at, "an empty name"));
        }
        Ok(a.text.clone())
    }

    /// `text_mention(TEXT)` or `text_mention(TEXT from a, b)`.
    fn text_mention(&self, at: usize, args: &[Arg]) -> Result<StopCondition, ParseStopError> {
        let Some(first) = args.first() else {
            return Err(self.error(at, "`text_mention` needs a text: `text_mention(TEXT)`"));
        };
        let (text, from) = if first.quoted {
            match first.rest.strip_prefix("from") {
                None if first.rest.is_empty() => (first.text.clone(), None),
                Some(src) if src.starts_with(char::is_whitespace) => (
                    first.text.clone(),
                    Some((src.trim().to_string(), first.rest_at + 5)),
                ),
                _ => {
                    return Err(self.error(
                        first.rest_at,
                        "expected `from SOURCE` or `)` after the quoted text",
                    ));
                }
            }
        } else {
            match first.text.rfind(" from ") {
                Some(i) => (
                    first.text[..i].trim().to_string(),
                    Some((
                        first.text[i + 6..].trim().to_string(),
                        first.at + first.text[..i + 6].chars().count(),
                    )),
                ),
                None => (first.text.clone(), None),
            }
        };
        if text.is_empty() {
            return Err(self.error(first.at, "an empty text is mentioned by every message"));
        }
        match from {
            None => {
                if let Some(extra) = args.get(1) {
                    return Err(self.error(
                        extra.at,
                        "`text_mention` takes one text; name sources with `text_mention(TEXT from a, b)`, or quote a text holding `,`",
                    ));
                }
                Ok(StopCondition::text_mention(text))
            }
            Some((src, src_at)) => {
                if src.is_empty() {
                    return Err(self.error(src_at, "`from` names no source"));
                }
                let mut sources = vec![src];
                for a in &args[1..] {
                    sources.push(self.name_arg(a)?);
                }
                Ok(StopCondition::text_mention_from(text, sources))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let c = StopCondition::parse(text).unwrap();
        let again = StopCondition::parse(&c.to_string()).unwrap();
        assert_eq!(c.to_string(), again.to_string(), "{text}");
    }

    #[test]
    fn every_kind_reads_and_prints_back() {
        for text in [
            "max_messages(10)",
            "max_turns(3) | token_budget(500)",
            "timeout(1m 30s)",
            "text_mention(APPROVE)",
            "text_mention(\"a, (b)\" from critic, editor)",
            "text_mention(I approve from critic)",
            "text_message | text_message(a, b)",
            "source_match(a, b) & handoff(user)",
            "stop_message | function_call(search)",
            "external",
            "(max_turns(1) | max_turns(2)) & stop_message",
            "max_cost(0.5) | max_model_calls(3) | max_tool_calls(2)",
        ] {
            round_trip(text);
        }
        let c = StopCondition::parse("text_mention(I approve from critic)").unwrap();
        assert!(
            matches!(c, StopCondition::TextMention { ref text, sources: Some(ref s) }
            if text == "I approve" && s == &["critic".to_string()])
        );
        let c = StopCondition::parse("a_b(1)").unwrap_err();
        assert_eq!(c.offset, 0);
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let c = StopCondition::parse("max_turns(1) | max_turns(2) & stop_message").unwrap();
        assert_eq!(
            c.to_string(),
            "max_turns(1) | (max_turns(2) & stop_message)"
        );
        let c = StopCondition::parse("(max_turns(1) | max_turns(2)) & stop_message").unwrap();
        assert!(matches!(c, StopCondition::All(ref v) if v.len() == 2));
    }

    #[test]
    fn groups_nest_only_so_deep() {
        let deep = format!("{}max_turns(1){}", "(".repeat(7000), ")".repeat(7000));
        let e = StopCondition::parse(&deep).unwrap_err();
        assert_eq!(e.offset, MAX_DEPTH);
        assert!(e.message.contains("nested more than 64 deep"), "{e}");
        let fine = format!("{}max_turns(1){}", "(".repeat(60), ")".repeat(60));
        assert!(StopCondition::parse(&fine).is_ok());
    }

    #[test]
    fn errors_point_inside_the_expression() {
        let at = |text: &str| StopCondition::parse(text).unwrap_err();
        assert_eq!(at("max_messages(10) | nope(1)").offset, 19);
        assert!(
            at("max_messages(10) | nope(1)")
                .message
                .contains("unknown stop condition `nope`")
        );
        assert_eq!(at("max_messages(ten)").offset, 13);
        assert_eq!(at("max_messages(0)").offset, 13);
        assert_eq!(at("timeout(soon)").offset, 8);
        assert_eq!(at("max_turns(2) |").offset, 14);
        assert_eq!(at("handoff(user").offset, 7);
        assert_eq!(at("handoff(a, b)").offset, 11);
        assert_eq!(at("stop_message(x)").offset, 13);
        assert_eq!(at("max_turns(1) max_turns(2)").offset, 13);
        assert_eq!(at("text_mention(\"x)").offset, 13);
        assert!(at("custom(f)").message.contains("Rust closure"));
        assert_eq!(at("(max_turns(1)").offset, 13);
        assert!(at("max_cost(-1)").message.contains("amount in USD"));
        assert_eq!(at("max_cost(free)").offset, 9);
        assert_eq!(at("max_tool_calls(0)").offset, 15);
        assert!(matches!(
            StopCondition::parse("max_cost($0.25)"),
            Ok(StopCondition::MaxCost(c)) if c == 0.25
        ));
    }
}
