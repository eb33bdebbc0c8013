//! The unit agents exchange: [`Message`] and its [`Content`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The name messages from the caller carry as their source.
pub const USER: &str = "user";

/// A message's identity: unique across processes (a random per-process
/// prefix and a counter), so a message delivered twice — through two
/// inboxes into one shared thread, or by a retried remote call — is
/// recognised and enters a thread once.
///
/// In JSON (events, stored sessions) an id is its 32 hexadecimal digits as
/// a string: as a number it would be rounded by jq and JavaScript, which
/// keep 53 bits. Ids written as numbers by earlier versions still read
/// back. Binary encodings (checkpoints, the cluster's wire) keep the
/// 128-bit integer.
///
/// That integer is also written by hand in checkpoints
/// (`checkpoint::snapshot_refs`, `checkpoint::delta`'s id runs): change
/// them together (`a_message_written_by_hand_is_what_serde_writes` and
/// `threads_name_their_payloads_messages_in_runs` pin them).
///
/// ```
/// use troupe_runtime::message::MessageId;
///
/// let id = MessageId(0x0123_4567_89ab_cdef_0000_0000_0000_002a);
/// let json = serde_json::to_string(&id).unwrap();
/// assert_eq!(json, "\"0123456789abcdef000000000000002a\"");
/// assert_eq!(serde_json::from_str::<MessageId>(&json).unwrap(), id);
/// assert_eq!(serde_json::from_str::<MessageId>("42").unwrap(), MessageId(42));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(pub u128);

impl Serialize for MessageId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(self)
        } else {
            s.serialize_u128(self.0)
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for MessageId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MessageId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A message's id: 32 hexadecimal digits.",
            "type": "string",
            "pattern": "^[0-9a-f]{1,32}$"
        })
    }
}

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            d.deserialize_any(IdVisitor)
        } else {
            u128::deserialize(d).map(MessageId)
        }
    }
}

/// Reads an id from its hexadecimal string, or from a number (as earlier
/// versions wrote it).
struct IdVisitor;

impl serde::de::Visitor<'_> for IdVisitor {
    type Value = MessageId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message id: up to 32 hexadecimal digits, or an integer")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MessageId, E> {
        if v.is_empty() || v.len() > 32 {
            return Err(E::custom(format!(
                "message id '{v}' is not 1 to 32 hexadecimal digits"
            )));
        }
        u128::from_str_radix(v, 16)
            .map(MessageId)
            .map_err(|_| E::custom(format!("message id '{v}' is not hexadecimal")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MessageId, E> {
        Ok(MessageId(u128::from(v)))
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<MessageId, E> {
        Ok(MessageId(v))
    }
}

impl MessageId {
    /// A fresh id, never handed out before in this process.
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        MessageId(((process_prefix() as u128) << 64) | n as u128)
    }
}

impl Default for MessageId {
    fn default() -> Self {
        Self::new()
    }
}

/// A per-process random prefix, so ids made by two processes of a cluster
/// (or a process resumed from a checkpoint) do not collide. `fastrand`
/// seeds itself from std's OS-seeded hasher, the thread and the time.
fn process_prefix() -> u64 {
    static PREFIX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PREFIX.get_or_init(|| fastrand::u64(..))
}

/// Hashes [`MessageId`]s for the id sets every thread keeps: one multiply
/// per id instead of SipHash's rounds. Ids are a counter under a random
/// prefix, so a keyed multiply spreads them well; the per-process keys keep
/// ids read from elsewhere (checkpoints, other nodes) from being chosen to
/// collide.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdHash {
    keys: (u64, u64),
}

impl Default for IdHash {
    fn default() -> Self {
        static KEYS: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
        let keys = *KEYS.get_or_init(|| (fastrand::u64(..), fastrand::u64(..) | 1));
        IdHash { keys }
    }
}

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher {
            keys: self.keys,
            state: 0,
        }
    }
}

/// The hasher [`IdHash`] builds.
#[derive(Debug)]
pub(crate) struct IdHasher {
    keys: (u64, u64),
    state: u64,
}

impl IdHasher {
    fn mix(&mut self, lo: u64, hi: u64) {
        let product = u128::from(lo ^ self.keys.0 ^ self.state) * u128::from(hi ^ self.keys.1);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.state
    }

    fn write_u128(&mut self, n: u128) {
        self.mix(n as u64, (n >> 64) as u64);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only ids are hashed with this; any other input still hashes
        // correctly, eight bytes at a time.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word), chunk.len() as u64);
        }
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Tokens a model call consumed.
///
/// Its checkpoint encoding (serde + bincode) is also written by hand, in
/// `checkpoint::snapshot_refs::write_message`: change the two together (the test
/// `a_message_written_by_hand_is_what_serde_writes` pins them equal).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens in the completion.
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, rhs: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens + rhs.prompt_tokens,
            completion_tokens: self.completion_tokens + rhs.completion_tokens,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// A model's request to call a tool.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the result must answer to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text (kept as text so every encoding can carry it).
    pub arguments: String,
}

/// What a tool call gave back.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The result (or the error text) shown to the model.
    pub content: String,
    /// Whether the call failed; the model sees the error text either way.
    pub is_error: bool,
    /// A short note kept in the agent's context after the raw result is
    /// trimmed away (an action's "memory").
    pub memory: Option<String>,
}

/// Control handed to another agent (or to `user`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    /// Who takes over.
    pub target: String,
    /// Why, or what the next agent should know.
    pub reason: String,
}

/// What a message says.
///
/// `Text` is variant 0 also in `checkpoint::snapshot_refs::write_message`,
/// which writes text messages by hand: keep it first (the test
/// `a_message_written_by_hand_is_what_serde_writes` pins it).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Tool calls requested by a model.
    ToolCalls(Vec<ToolCall>),
    /// Results of tool calls.
    ToolResults(Vec<ToolResult>),
    /// A handoff to another agent.
    Handoff(Handoff),
    /// Structured output, as JSON text.
    Structured(String),
    /// A request to stop, with the reason.
    Stop(String),
}

impl Content {
    /// The text a reader (or a stop condition) sees in this content.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Content::Text(t) | Content::Structured(t) | Content::Stop(t) => Cow::Borrowed(t),
            Content::Handoff(h) => Cow::Borrowed(&h.reason),
            Content::ToolCalls(calls) => Cow::Owned(
                calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, c.arguments))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Content::ToolResults(results) => Cow::Owned(
                results
                    .iter()
                    .map(|r| r.content.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }
}

/// One message of a conversation.
///
/// Its checkpoint encoding (serde + bincode) is also written by hand, in
/// `checkpoint::snapshot_refs::write_message` (text messages): change the two together (the test
/// `a_message_written_by_hand_is_what_serde_writes` pins them equal).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique id; a thread holds a message at most once.
    pub id: MessageId,
    /// Who produced it: an agent's name, or [`USER`].
    pub source: Arc<str>,
    /// What it says.
    pub content: Content,
    /// When it was created (TTLs are measured from here).
    pub created_at: SystemTime,
    /// Tokens spent producing it, if a model did.
    pub usage: Option<Usage>,
    /// Free-form annotations.
    pub metadata: BTreeMap<String, String>,
}

impl Message {
    /// A message with the given source and content, created now.
    pub fn new(source: impl Into<Arc<str>>, content: Content) -> Self {
        Message {
            id: MessageId::new(),
            source: source.into(),
            content,
            created_at: crate::clock::now(),
            usage: None,
            metadata: BTreeMap::new(),
        }
    }

    /// A text message from `source`.
    pub fn text(source: impl Into<Arc<str>>, text: impl Into<String>) -> Self {
        Self::new(source, Content::Text(text.into()))
    }

    /// A text message from the caller ([`USER`]).
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(USER, text)
    }

    /// A handoff from `source` to `target`.
    pub fn handoff(
        source: impl Into<Arc<str>>,
        target: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(
            source,
            Content::Handoff(Handoff {
                target: target.into(),
                reason: reason.into(),
            }),
        )
    }

    /// Structured output (JSON text) from `source`.
    pub fn structured(source: impl Into<Arc<str>>, json: impl Into<String>) -> Self {
        Self::new(source, Content::Structured(json.into()))
    }

    /// Sets the token usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Adds a metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The text of the content (see [`Content::text`]).
    pub fn text_content(&self) -> std::borrow::Cow<'_, str> {
        self.content.text()
    }

    /// The handoff this message carries, if any.
    pub fn handoff_target(&self) -> Option<&str> {
        match &self.content {
            Content::Handoff(h) => Some(&h.target),
            _ => None,
        }
    }
}

impl troupe_router::Envelope for Message {
    fn sender(&self) -> &str {
        &self.source
    }
    fn created_at(&self) -> SystemTime {
        self.created_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_print_as_hex() {
        let a = MessageId::new();
        let b = MessageId::new();
        assert_ne!(a, b);
        assert_eq!(a.to_string().len(), 32);
    }

    #[test]
    fn text_of_each_content() {
        assert_eq!(Message::user("hi").text_content(), "hi");
        let h = Message::handoff("a", "b", "over to you");
        assert_eq!(h.handoff_target(), Some("b"));
        assert_eq!(h.text_content(), "over to you");
    }
}
