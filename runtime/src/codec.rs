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
/// (version 3) keep what the run spent per agent ([`crate::RunStats`])
/// instead of its token usage alone.
/// 5: a checkpoint's payload is tagged whole (`F`) or a delta against its
/// parent (`D`): messages stored once by id, threads as id lists appended
/// to or replaced, the small state whole (`store/delta.rs`,
/// `workflow/snapshot_delta.rs`); checksummed with CRC-32C.
pub const FORMAT_VERSION: u32 = 5;

/// Encoding or decoding failed.
#[derive(Debug, thiserror::Error)]
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
        child
            .children_mut()
            .insert("deep".into(), Thread::from_messages(every_content()));
        t.children_mut().insert("a".into(), child);
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
