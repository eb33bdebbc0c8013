//! The stored byte layout of a conversation's thread (every store keeps a
//! conversation as one such record), and its encoding made again from the
//! last one when only messages were added.
//!
//! ```text
//! thread record: "TRPTHRD2" | THREAD_FORMAT_VERSION: u32 LE | CRC-32C(body): u64 LE | body: codec(Thread)
//! older record:  "TRPTHRD1" | THREAD_FORMAT_VERSION: u32 LE | FNV-1a(body): u64 LE  | body: codec(Thread)
//! ```
//!
//! The magic bytes tell a stray file from a damaged one and name the
//! checksum; the checksum is there because bincode happily decodes many
//! damaged inputs into wrong values instead of failing. Records of the
//! first layout are read, no longer written: FNV-1a goes a byte at a time,
//! and a long session paid for it on every save (CRC-32C, as checkpoints
//! since format 5 use, runs on the CPU's own instruction).
//!
//! A session's thread grows by a few messages a turn, and is saved whole
//! after each. [`encode_thread_after`] makes the record from the
//! [`EncodedThread`] of the last save: the messages of a thread (or of a
//! child thread) that begins with every message encoded last time are
//! copied as bytes, and only the new ones are encoded. The record is byte
//! for byte what [`encode_thread`] makes.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::{self, CodecError};
use super::record::{checksum, legacy_checksum};
use crate::message::Message;
use crate::store::StoreError;
use crate::thread::Thread;

/// Start of a thread record (CRC-32C).
const THREAD_MAGIC: &[u8; 8] = b"TRPTHRD2";
/// Start of a thread record of the first layout (FNV-1a).
const THREAD_MAGIC_FNV: &[u8; 8] = b"TRPTHRD1";
/// Bytes before a record's body.
const THREAD_PREFIX: usize = 20;

/// The version of a thread record's body: a [`Thread`]'s encoding, which
/// checkpoint format 5 left as format 4 had it.
pub(crate) const THREAD_FORMAT_VERSION: u32 = 4;

/// What a thread's record was made of, kept to make the next one: per
/// thread (and child thread), its messages and their encodings.
#[derive(Debug, Default)]
pub(crate) struct EncodedThread {
    /// The messages encoded (held, so none of them is freed and its
    /// address taken by another while this is kept).
    messages: Vec<Arc<Message>>,
    /// Their encodings, one after another.
    bytes: Vec<u8>,
    children: BTreeMap<String, EncodedThread>,
}

impl EncodedThread {
    /// The bytes this keeps (encodings, not counting the messages).
    pub(crate) fn size(&self) -> usize {
        self.bytes.len() + self.children.values().map(Self::size).sum::<usize>()
    }
}

/// Encodes a thread as a stored record.
pub(crate) fn encode_thread(thread: &Thread, conversation: &str) -> Result<Vec<u8>, StoreError> {
    encode_thread_after(thread, conversation, None).map(|(record, _)| record)
}

/// Encodes a thread as a stored record, copying the encodings of the
/// messages `before` holds (the last record of this conversation) where
/// the thread still begins with them; with what to keep for the next.
pub(crate) fn encode_thread_after(
    thread: &Thread,
    conversation: &str,
    before: Option<&EncodedThread>,
) -> Result<(Vec<u8>, EncodedThread), StoreError> {
    let mut out = Vec::with_capacity(THREAD_PREFIX + before.map_or(256, |b| b.size() + 256));
    out.extend_from_slice(THREAD_MAGIC);
    out.extend_from_slice(&THREAD_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    let encoded = encode_body(thread, before, &mut out).map_err(|source| StoreError::Encode {
        what: format!("thread of conversation '{conversation}'"),
        source,
    })?;
    let sum = checksum(&out[THREAD_PREFIX..]);
    out[12..THREAD_PREFIX].copy_from_slice(&sum.to_le_bytes());
    Ok((out, encoded))
}

/// Writes `codec(thread)` at the end of `out` as serde would (a struct of
/// messages, children and state, in that order), reusing `before`.
fn encode_body(
    thread: &Thread,
    before: Option<&EncodedThread>,
    out: &mut Vec<u8>,
) -> Result<EncodedThread, CodecError> {
    let messages = thread.messages();
    let kept = before.filter(|b| {
        b.messages.len() <= messages.len()
            && b.messages
                .iter()
                .zip(messages)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    });
    let (mut bytes, from) = match kept {
        Some(b) => {
            // Room for the new messages too, so they do not move it.
            let new = messages.len() - b.messages.len();
            let mut bytes = Vec::with_capacity(b.bytes.len() + new * 128);
            bytes.extend_from_slice(&b.bytes);
            (bytes, b.messages.len())
        }
        None => (Vec::new(), 0),
    };
    for m in &messages[from..] {
        codec::encode_into(&**m, &mut bytes)?;
    }
    codec::encode_into(&(messages.len() as u64), out)?;
    out.extend_from_slice(&bytes);
    codec::encode_into(&(thread.children().len() as u64), out)?;
    let mut children = BTreeMap::new();
    for (name, child) in thread.children() {
        codec::encode_into(name, out)?;
        let before = before.and_then(|b| b.children.get(name));
        children.insert(name.clone(), encode_body(child, before, out)?);
    }
    codec::encode_into(&thread.state(), out)?;
    Ok(EncodedThread {
        messages: messages.to_vec(),
        bytes,
        children,
    })
}

/// Decodes a stored thread record; `what` names its file or row in errors.
pub(crate) fn decode_thread(bytes: &[u8], what: &str) -> Result<Thread, StoreError> {
    if bytes.len() < THREAD_PREFIX {
        return Err(StoreError::corrupt(
            what,
            format!(
                "truncated: {} bytes, shorter than the record header",
                bytes.len()
            ),
        ));
    }
    let sum_of: fn(&[u8]) -> u64 = match &bytes[..8] {
        m if m == THREAD_MAGIC => checksum,
        m if m == THREAD_MAGIC_FNV => legacy_checksum,
        _ => {
            return Err(StoreError::corrupt(
                what,
                "not a troupe thread record (bad magic bytes)",
            ));
        }
    };
    let mut version = [0u8; 4];
    version.copy_from_slice(&bytes[8..12]);
    let version = u32::from_le_bytes(version);
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[12..20]);
    let sum = u64::from_le_bytes(sum);
    let body = &bytes[THREAD_PREFIX..];
    let actual = sum_of(body);
    // Checked before the version: damage can look like any version.
    if actual != sum {
        return Err(StoreError::corrupt(
            what,
            format!("checksum is {actual:016x}, the record says {sum:016x} (truncated or damaged)"),
        ));
    }
    if version != THREAD_FORMAT_VERSION {
        return Err(StoreError::UnsupportedVersion {
            what: what.to_string(),
            found: version,
            expected: THREAD_FORMAT_VERSION,
        });
    }
    codec::decode(body).map_err(|e| StoreError::corrupt(what, format!("{e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::WorkflowState;

    fn damage_is_caught(rec: &[u8]) {
        for cut in 0..rec.len() {
            assert!(decode_thread(&rec[..cut], "c").is_err());
        }
        for i in 0..rec.len() {
            let mut bad = rec.to_vec();
            bad[i] ^= 0x80;
            assert!(decode_thread(&bad, "c").is_err(), "byte {i}");
        }
    }

    #[test]
    fn thread_record_round_trips_and_damage_is_caught() {
        let t = Thread::from_messages([Message::user("hello"), Message::text("a", "hi")]);
        let rec = encode_thread(&t, "c").unwrap();
        assert_eq!(&rec[..8], THREAD_MAGIC);
        assert_eq!(decode_thread(&rec, "c").unwrap(), t);
        damage_is_caught(&rec);

        // A record of the first layout still reads, and is checked.
        let body = codec::encode(&t).unwrap();
        let mut old = THREAD_MAGIC_FNV.to_vec();
        old.extend_from_slice(&THREAD_FORMAT_VERSION.to_le_bytes());
        old.extend_from_slice(&legacy_checksum(&body).to_le_bytes());
        old.extend_from_slice(&body);
        assert_eq!(decode_thread(&old, "c").unwrap(), t);
        damage_is_caught(&old);
    }

    fn session(turns: usize) -> Thread {
        let mut t = Thread::new();
        for i in 0..turns {
            t.push(Message::user(format!("question {i}")));
            for agent in ["a", "b"] {
                let reply = Arc::new(Message::text(agent, format!("{agent} says {i}")));
                t.push_shared(reply.clone());
                let child = t.children_mut().entry(agent.into()).or_default();
                child.push_shared(reply);
                if i % 2 == 0 {
                    child
                        .children_mut()
                        .entry("tool".into())
                        .or_default()
                        .push(Message::text("tool", "ran"));
                }
            }
        }
        *t.state_mut() = Some(WorkflowState {
            consumed: t.len(),
            ..WorkflowState::default()
        });
        t
    }

    #[test]
    fn a_record_made_from_the_last_one_is_the_whole_encoding() {
        let mut t = session(3);
        let (first, mut kept) = encode_thread_after(&t, "c", None).unwrap();
        assert_eq!(first, encode_thread(&t, "c").unwrap());
        for turn in 0..4 {
            // Messages added to the thread, a child, a new child.
            t.push(Message::user(format!("more {turn}")));
            let child = t.children_mut().get_mut("a").unwrap();
            child.push(Message::text("a", "again"));
            t.children_mut()
                .entry(format!("new {turn}"))
                .or_default()
                .push(Message::text("n", "first"));
            *t.state_mut() = None;
            let (rec, next) = encode_thread_after(&t, "c", Some(&kept)).unwrap();
            assert_eq!(rec, encode_thread(&t, "c").unwrap(), "turn {turn}");
            assert_eq!(decode_thread(&rec, "c").unwrap(), t);
            kept = next;
        }
        // A thread that no longer begins with the messages kept (one let
        // go, or the thread replaced) is encoded anew, as it is.
        t.forget_oldest(2);
        t.children_mut().insert(
            "b".into(),
            Box::new(Thread::from_messages([Message::user("x")])),
        );
        let (rec, _) = encode_thread_after(&t, "c", Some(&kept)).unwrap();
        assert_eq!(rec, encode_thread(&t, "c").unwrap());
        let other = session(2);
        let (rec, _) = encode_thread_after(&other, "c", Some(&kept)).unwrap();
        assert_eq!(rec, encode_thread(&other, "c").unwrap());
    }
}
