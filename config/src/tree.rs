//! The YAML document as a tree of nodes, each knowing where it was written.
//!
//! serde-saphyr parses the text (anchors, merge keys, resource budgets,
//! duplicate keys refused) and its `Spanned` wrapper gives every node's
//! position; the loader then deserializes the typed config from this tree
//! (see `de`), and validation finds the position of any field path in it.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::error::Position;

/// A YAML node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) at: Position,
    pub(crate) value: Value,
}

/// A mapping key: its text and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) at: Position,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    /// An integer too wide for 64 bits, kept as written (sign and digits,
    /// any width) so that errors quote it exactly rather than as a rounded
    /// float.
    Wide(String),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Value {
    /// How the value is described in "found …" messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing (null)",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::UInt(_) | Value::Wide(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

/// One step of a field path: a mapping key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A field path such as `workflow.steps[2].retry`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub(crate) struct FieldPath(pub(crate) Vec<Seg>);

impl FieldPath {
    pub(crate) fn root() -> Self {
        FieldPath(Vec::new())
    }

    pub(crate) fn key(&self, key: impl Into<String>) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(key.into()));
        p
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// Whether `self` is `other` or inside it.
    pub(crate) fn starts_with(&self, other: &FieldPath) -> bool {
        self.0.len() >= other.0.len() && self.0[..other.0.len()] == other.0[..]
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl Node {
    /// The node at `path`, if the document has one there.
    pub(crate) fn get(&self, path: &FieldPath) -> Option<&Node> {
        let mut node = self;
        for seg in &path.0 {
            node = node.child(seg)?;
        }
        Some(node)
    }

    fn child(&self, seg: &Seg) -> Option<&Node> {
        match (seg, &self.value) {
            (Seg::Key(k), Value::Map(entries)) => entries
                .iter()
                .find(|(key, _)| key.name == *k)
                .map(|(_, n)| n),
            (Seg::Index(i), Value::Seq(items)) => items.get(*i),
            _ => None,
        }
    }

    /// Where `path` is written: the key of its last step when it is a
    /// mapping entry (so "field `x`" points at `x:`), else the node; for a
    /// path the document lacks, the nearest enclosing node.
    pub(crate) fn position_of(&self, path: &FieldPath) -> Position {
        let mut node = self;
        let mut at = self.at;
        for seg in &path.0 {
            match (seg, &node.value) {
                (Seg::Key(k), Value::Map(entries)) => {
                    match entries.iter().find(|(key, _)| key.name == *k) {
                        Some((key, child)) => {
                            at = key.at;
                            node = child;
                        }
                        None => return at,
                    }
                }
                (Seg::Index(i), Value::Seq(items)) => match items.get(*i) {
                    Some(child) => {
                        at = child.at;
                        node = child;
                    }
                    None => return at,
                },
                _ => return at,
            }
        }
        at
    }

    /// Where the value at `path` starts (rather than its key).
    pub(crate) fn value_position(&self, path: &FieldPath) -> Position {
        self.get(path)
            .map(|n| n.at)
            .unwrap_or_else(|| self.position_of(path))
    }

    /// Removes the node at `path`; returns whether there was one.
    pub(crate) fn remove(&mut self, path: &FieldPath) -> bool {
        let Some((last, parent)) = path.0.split_last() else {
            return false;
        };
        let mut node = self;
        for seg in parent {
            let next = match (seg, &mut node.value) {
                (Seg::Key(k), Value::Map(entries)) => entries
                    .iter_mut()
                    .find(|(key, _)| key.name == *k)
                    .map(|(_, n)| n),
                (Seg::Index(i), Value::Seq(items)) => items.get_mut(*i),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => return false,
            }
        }
        match (last, &mut node.value) {
            (Seg::Key(k), Value::Map(entries)) => {
                let before = entries.len();
                entries.retain(|(key, _)| key.name != *k);
                entries.len() != before
            }
            (Seg::Index(i), Value::Seq(items)) if *i < items.len() => {
                // Replaced by null rather than removed, so later indexes
                // (and the positions reported for them) stay as written.
                items[*i].value = Value::Null;
                true
            }
            _ => false,
        }
    }
}

fn position(loc: &serde_saphyr::Location) -> Position {
    Position::new(
        u32::try_from(loc.line()).unwrap_or(u32::MAX),
        u32::try_from(loc.column()).unwrap_or(u32::MAX),
    )
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            at: position(&spanned.referenced),
            value: spanned.value,
        })
    }
}

/// A mapping key: any scalar, kept as its text (`true:` is the key "true").
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = KeyText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<KeyText, E> {
                Ok(KeyText(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyText, E> {
                Ok(KeyText("null".into()))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                Ok(Value::UInt(v))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
                Ok(Value::Wide(v.to_string()))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
                Ok(Value::Wide(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
                Ok(Value::Str(v))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
                Ok(Value::Str(String::from_utf8_lossy(v).into_owned()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Value, D2::Error> {
                Value::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(node) = seq.next_element::<Node>()? {
                    items.push(node);
                }
                Ok(Value::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
                    let value = map.next_value::<Node>()?;
                    entries.push((
                        Key {
                            name: key.value.0,
                            at: position(&key.referenced),
                        },
                        value,
                    ));
                }
                Ok(Value::Map(entries))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A YAML syntax error: the message and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) at: Position,
    pub(crate) message: String,
}

/// Parses YAML text into a tree. An empty document is a null node.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    if text.trim().is_empty() {
        return Ok(Node {
            at: Position::new(1, 1),
            value: Value::Null,
        });
    }
    // YAML 1.2 booleans only: `y`, `no` and `on` stay text (a step id, a
    // country code), and messages come without a rendered snippet (the
    // diagnostic gives the position).
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    let mut node = serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| {
        let at = e
            .location()
            .map(|l| position(&l))
            .unwrap_or(Position::new(1, 1));
        SyntaxError {
            at,
            message: bare_message(&e.to_string()),
        }
    })?;
    let lines: Vec<&str> = text.lines().collect();
    exact_integers(&mut node, &lines);
    Ok(node)
}

/// The YAML parser reads an integer too wide for 64 bits as a float
/// (`99999999999999999999999999` becomes 1e26); read such integers again
/// from the text as written, so that errors quote them exactly.
fn exact_integers(node: &mut Node, lines: &[&str]) {
    match &mut node.value {
        Value::Float(_) => {
            if let Some(n) = written_integer(lines, node.at) {
                node.value = Value::Wide(n);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(|n| exact_integers(n, lines)),
        Value::Map(entries) => entries
            .iter_mut()
            .for_each(|(_, n)| exact_integers(n, lines)),
        _ => {}
    }
}

/// The integer written at `at`, if a plain (signed) decimal integer is
/// written there and nothing else.
fn written_integer(lines: &[&str], at: Position) -> Option<String> {
    let line = lines.get(usize::try_from(at.line).ok()?.checked_sub(1)?)?;
    let skip = usize::try_from(at.column).ok()?.checked_sub(1)?;
    let rest: String = line.chars().skip(skip).collect();
    let digits_from = usize::from(rest.starts_with(['-', '+']));
    let end = rest[digits_from..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(rest.len(), |i| i + digits_from);
    let token = &rest[..end];
    let after = rest[end..].chars().next();
    let ends_there = matches!(
        after,
        None | Some(' ' | '\t' | ',' | ']' | '}' | '#' | '\r')
    );
    if end > digits_from && ends_there {
        Some(token.trim_start_matches('+').to_string())
    } else {
        None
    }
}

/// serde-saphyr renders its errors with the location and a snippet of the
/// source; the diagnostic carries the location itself, so keep the first
/// line and drop a trailing "at line …" if there is one.
fn bare_message(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or(rendered).trim();
    let first = match first.find(" at line ") {
        Some(i) => &first[..i],
        None => first,
    };
    let first = first.trim_start_matches("error: ").trim();
    // Advice meant for the parser's callers, not for whoever writes YAML.
    let first = ["; use from_str_multiple", ", set DuplicateKeyPolicy"]
        .iter()
        .filter_map(|advice| first.find(advice))
        .min()
        .map_or(first, |i| &first[..i]);
    let first = first.replace("non-finite float", "a number too large for a float,");
    let first = first.replace(" rejected by the configured policy", "");
    if first.is_empty() {
        "invalid YAML".to_string()
    } else {
        format!("invalid YAML: {first}")
    }
}

#[cfg(test)]
mod tests {
    use super::{Value, parse};

    #[test]
    fn integers_of_any_width_are_kept_as_written() {
        for (text, written) in [
            (
                "n: 99999999999999999999999999\n",
                "99999999999999999999999999",
            ),
            (
                "n: 9999999999999999999999999999999999999999999\n",
                "9999999999999999999999999999999999999999999",
            ),
            (
                "n: [-99999999999999999999999999]\n",
                "-99999999999999999999999999",
            ),
        ] {
            let tree = parse(text).unwrap();
            let Value::Map(entries) = &tree.value else {
                panic!("{text}: not a mapping")
            };
            let value = match &entries[0].1.value {
                Value::Seq(items) => items[0].value.clone(),
                v => v.clone(),
            };
            assert_eq!(value, Value::Wide(written.into()), "{text}");
        }
    }
}
