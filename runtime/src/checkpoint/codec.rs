//! The one place that knows the binary format (bincode 2, serde mode), used
//! for checkpoints and for messages crossing the wire between nodes.
//! Everything else calls [`encode`] and [`decode`], so the format can be
//! swapped here alone.
//!
//! bincode's serde mode cannot carry `serde_json::Value`, `untagged`,
//! `flatten` or skipped fields: encoded types keep JSON payloads as text.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Version of the encoded layout; bump it when an encoded type changes shape.
///
/// 2: a thread's workflow state keeps the scheduler's part typed
/// ([`crate::SchedulerState`]) instead of as JSON text in a map.
/// 3: a checkpoint's snapshot keeps when the run started and the status it
/// ended with (for listing runs without knowing their workflow); the
/// scheduler state (version 2) keeps the counters of a run not finished
/// and the run's state values ([`crate::SchedulerState::values`]).
/// 4: a checkpoint's snapshot and the counters in a scheduler state
/// (version 3) keep what the run spent per agent ([`crate::stats::RunStats`])
/// instead of its token usage alone.
/// 5: a checkpoint's payload is tagged whole (`F`) or a delta against its
/// parent (`D`): messages stored once by id, threads as id lists appended
/// to or replaced, the small state whole (`store/delta.rs`,
/// `workflow/snapshot_delta.rs`); checksummed with CRC-32C.
/// 6: the small state names each message waiting in an inbox by where it
/// sits in its thread, counted back from the end (two bytes), and by id
/// only when it is not among the thread's last 256 — the inboxes were
/// most of a delta's bytes; the payload is otherwise format 5's.
pub const FORMAT_VERSION: u32 = 6;

/// Encoding or decoding failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The value could not be encoded.
    #[error("cannot encode: {0}")]
    Encode(String),
    /// The bytes are not a valid encoding of the expected type.
    #[error("cannot decode: {0}")]
    Decode(String),
    /// Bytes were left over after the value: the input is not one value.
    #[error("cannot decode: {0} trailing bytes after the value")]
    Trailing(usize),
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a value into bytes.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CodecError> {
    bincode::serde::encode_to_vec(value, config()).map_err(|e| CodecError::Encode(e.to_string()))
}

/// Encodes a value at the end of `out`.
pub fn encode_into<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    bincode::serde::encode_into_writer(value, Append(out), config())
        .map_err(|e| CodecError::Encode(e.to_string()))
}

/// bincode's writer appending to a `Vec`: each piece one
/// `extend_from_slice` (through `std::io::Write`, each is a `write_all`
/// with its own result, counted — a checkpoint writes hundreds).
struct Append<'a>(&'a mut Vec<u8>);

impl bincode::enc::write::Writer for Append<'_> {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// A few pieces of the binary format written by hand, for the one hot
/// path that writes them by the hundred (a checkpoint's small state, see
/// `workflow/snapshot_refs.rs`): each appends exactly the bytes bincode
/// writes for the value — the tests below hold them to it — without going
/// through serde's layers for every integer.
pub(crate) mod raw {
    /// bincode's varint: values up to 250 in one byte, larger ones after
    /// a marker byte, little-endian.
    const SINGLE_BYTE_MAX: u64 = 250;
    const U16_BYTE: u8 = 251;
    const U32_BYTE: u8 = 252;
    const U64_BYTE: u8 = 253;
    const U128_BYTE: u8 = 254;

    /// A `u64` (or a `usize`, a length).
    #[inline(always)]
    pub(crate) fn u64(out: &mut Vec<u8>, v: u64) {
        if v <= SINGLE_BYTE_MAX {
            out.push(v as u8);
        } else if let Ok(v) = u16::try_from(v) {
            out.push(U16_BYTE);
            out.extend_from_slice(&v.to_le_bytes());
        } else if let Ok(v) = u32::try_from(v) {
            out.push(U32_BYTE);
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.push(U64_BYTE);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A `u128` (a message id).
    #[inline]
    pub(crate) fn u128(out: &mut Vec<u8>, v: u128) {
        match u64::try_from(v) {
            Ok(v) => u64(out, v),
            Err(_) => {
                out.push(U128_BYTE);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// A length: of a string, a sequence or a map.
    #[inline]
    pub(crate) fn len(out: &mut Vec<u8>, n: usize) {
        u64(out, n as u64);
    }

    /// A string.
    #[inline]
    pub(crate) fn str(out: &mut Vec<u8>, s: &str) {
        bytes(out, s.as_bytes());
    }

    /// A byte string (serde's `serialize_bytes`).
    #[inline]
    pub(crate) fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        len(out, b.len());
        out.extend_from_slice(b);
    }

    /// An `Option`'s tag: `None` is 0, `Some` 1 and then the value.
    #[inline]
    pub(crate) fn some(out: &mut Vec<u8>, is_some: bool) {
        out.push(u8::from(is_some));
    }

    /// An `f64`.
    #[inline]
    pub(crate) fn f64(out: &mut Vec<u8>, v: f64) {
        out.extend_from_slice(&v.to_le_bytes());
    }

    /// An enum's variant, by index.
    #[inline]
    pub(crate) fn variant(out: &mut Vec<u8>, index: u32) {
        u64(out, u64::from(index));
    }
}

/// How many bytes a decode may claim per input byte. bincode claims a
/// primitive's in-memory size (at most 16 bytes, a `u128`) for each value
/// it reads, at least one byte each, and a string's or byte buffer's
/// length before it allocates it: a valid input never claims more than 16
/// times its length, and a length prefix that claims more (a few bytes
/// saying "a terabyte follows") is refused before the allocation that
/// would abort the process.
const CLAIM_PER_BYTE: usize = 16;

/// Decodes with a limit of `LIMIT` bytes claimed.
fn decode_within<T: DeserializeOwned, const LIMIT: usize>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    bincode::serde::decode_from_slice(bytes, config().with_limit::<LIMIT>())
}

/// Decodes `bytes` with the smallest limit (a power of 16 from 1 MiB) at
/// least [`CLAIM_PER_BYTE`] times their length: bincode's limit is a
/// type parameter, so it is picked from a few.
fn decode_limited<T: DeserializeOwned>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    let need = bytes.len().saturating_mul(CLAIM_PER_BYTE);
    match need {
        n if n <= 1 << 20 => decode_within::<T, { 1 << 20 }>(bytes),
        n if n <= 1 << 24 => decode_within::<T, { 1 << 24 }>(bytes),
        n if n <= 1 << 28 => decode_within::<T, { 1 << 28 }>(bytes),
        #[cfg(target_pointer_width = "64")]
        n if n <= 1 << 32 => decode_within::<T, { 1 << 32 }>(bytes),
        #[cfg(target_pointer_width = "64")]
        n if n <= 1 << 36 => decode_within::<T, { 1 << 36 }>(bytes),
        _ => decode_within::<T, { usize::MAX }>(bytes),
    }
}

/// Decodes a value from exactly these bytes. A length inside them that
/// claims more than the bytes could hold is an error, not an allocation.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, read) = decode_limited(bytes).map_err(|e| CodecError::Decode(e.to_string()))?;
    if read != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - read));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Content, Handoff, Message, ToolCall, ToolResult, Usage};
    use crate::thread::{Thread, WorkflowState};
    use std::sync::Arc;

    fn every_content() -> Vec<Message> {
        vec![
            Message::user("hello"),
            Message::new(
                "a",
                Content::ToolCalls(vec![ToolCall {
                    id: "c1".into(),
                    name: "add".into(),
                    arguments: r#"{"a":1,"b":2}"#.into(),
                }]),
            ),
            Message::new(
                "a",
                Content::ToolResults(vec![ToolResult {
                    call_id: "c1".into(),
                    name: "add".into(),
                    content: "3".into(),
                    is_error: false,
                    memory: Some("added".into()),
                }]),
            ),
            Message::new(
                "a",
                Content::Handoff(Handoff {
                    target: "b".into(),
                    reason: "yours".into(),
                }),
            ),
            Message::structured("b", r#"{"ok":true}"#),
            Message::new("b", Content::Stop("done".into()))
                .with_usage(Usage {
                    prompt_tokens: 3,
                    completion_tokens: 4,
                })
                .with_metadata("k", "v"),
        ]
    }

    #[test]
    fn every_message_kind_round_trips() {
        for m in every_content() {
            let back: Message = decode(&encode(&m).unwrap()).unwrap();
            assert_eq!(back, m);
            let json: Message = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
            assert_eq!(json, m);
        }
    }

    #[test]
    fn thread_with_children_and_state_round_trips() {
        let mut t = Thread::from_messages(every_content());
        let mut child = Thread::from_messages([Message::user("inner")]);
        child.children_mut().insert(
            "deep".into(),
            Box::new(Thread::from_messages(every_content())),
        );
        t.children_mut().insert("a".into(), Box::new(child));
        let mut state = WorkflowState {
            consumed: 3,
            turns: 7,
            last_speaker: Some("a".into()),
            ..Default::default()
        };
        state
            .pending
            .insert("b".into(), vec![Arc::new(Message::user("waiting"))]);
        state.scheduler.body_mut().interrupted.push("b".into());
        *t.state_mut() = Some(state);
        let back: Thread = decode(&encode(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    /// Every hand-written piece is bincode's bytes for the value, at each
    /// varint boundary.
    #[test]
    fn raw_pieces_are_bincode_bytes() {
        let edges: [u64; 12] = [
            0,
            1,
            250,
            251,
            255,
            65_535,
            65_536,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ];
        for v in edges {
            let mut out = Vec::new();
            raw::u64(&mut out, v);
            assert_eq!(out, encode(&v).unwrap(), "u64 {v}");
            let mut out = Vec::new();
            raw::u128(&mut out, u128::from(v));
            assert_eq!(out, encode(&u128::from(v)).unwrap(), "u128 {v}");
            let wide = (u128::from(v) << 64) | 7;
            let mut out = Vec::new();
            raw::u128(&mut out, wide);
            assert_eq!(out, encode(&wide).unwrap(), "u128 {wide}");
        }
        for s in ["", "agent-1", &"x".repeat(300), &"é".repeat(40_000)] {
            let mut out = Vec::new();
            raw::str(&mut out, s);
            assert_eq!(out, encode(s).unwrap());
        }
        for o in [None, Some(0.25f64), Some(-1e300)] {
            let mut out = Vec::new();
            raw::some(&mut out, o.is_some());
            if let Some(v) = o {
                raw::f64(&mut out, v);
            }
            assert_eq!(out, encode(&o).unwrap());
        }
        #[derive(Serialize)]
        enum E {
            _A,
            _B,
            C(u8),
        }
        let mut out = Vec::new();
        raw::variant(&mut out, 2);
        out.push(9);
        assert_eq!(out, encode(&E::C(9)).unwrap());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let bytes = encode(&Message::user("x")).unwrap();
        assert!(decode::<Message>(&bytes[..bytes.len() / 2]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode::<Message>(&longer),
            Err(CodecError::Trailing(1))
        ));
        assert!(decode::<Thread>(&[0xff; 7]).is_err());
    }
}
