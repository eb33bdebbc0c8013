//! The payload of a checkpoint from format 5 on: messages stored once by
//! id, threads as id lists, and the run's small state as opaque bytes.
//!
//! ```text
//! payload: tag (b'F' whole | b'D' delta against the parent) | codec(ChainPayload)
//! ```
//!
//! A whole payload holds every message and every thread ([`ThreadOp::Replace`]);
//! a delta holds the messages not stored before in its chain, the threads
//! that changed (appended to, replaced or removed) and the small state
//! whole. [`Folded`] applies a chain, oldest first, and gives back one
//! whole payload equal to its end: that is how a chain loads, and how
//! stores compact one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::checkpoint::{DELTA_TAG, FULL_TAG};
use crate::codec::{self, CodecError};
use crate::message::{IdHash, Message, MessageId};

/// Where a thread sits in a run's thread tree: the names of the children
/// on the way down from the run's thread (empty for the run's thread).
pub type ThreadPath = Vec<String>;

/// How a thread changed since the parent checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadOp {
    /// These messages were appended.
    Append(Vec<MessageId>),
    /// The thread is now exactly these messages.
    Replace(Vec<MessageId>),
    /// The thread is gone.
    Remove,
}

/// What a format-5 payload holds after its tag.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChainPayload {
    /// Messages not stored before in the chain, each once.
    pub messages: Vec<Arc<Message>>,
    /// The threads that changed, parents before children.
    pub threads: Vec<(ThreadPath, ThreadOp)>,
    /// The run's small state (counters, scheduler, inbox contents by id),
    /// whole: opaque to stores.
    #[serde(with = "as_bytes")]
    pub head: Vec<u8>,
}

/// A `Vec<u8>` written and read as one byte string rather than byte by
/// byte: the same bytes in bincode (a length, then the bytes), a copy
/// instead of a call per byte.
mod as_bytes {
    use serde::de::{Deserializer, Error, SeqAccess, Visitor};
    use serde::ser::Serializer;

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a byte string")
        }

        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

impl ChainPayload {
    /// The payload's bytes: its tag, then its encoding.
    pub fn encode(&self, delta: bool) -> Result<Vec<u8>, CodecError> {
        let mut out = vec![if delta { DELTA_TAG } else { FULL_TAG }];
        codec::encode_into(self, &mut out)?;
        Ok(out)
    }

    /// Reads a tagged payload; says whether it is a delta.
    pub fn decode(bytes: &[u8]) -> Result<(bool, ChainPayload), CodecError> {
        match bytes.split_first() {
            Some((&DELTA_TAG, rest)) => Ok((true, codec::decode(rest)?)),
            Some((&FULL_TAG, rest)) => Ok((false, codec::decode(rest)?)),
            Some((tag, _)) => Err(CodecError::Decode(format!(
                "unknown checkpoint payload tag {tag:#04x}"
            ))),
            None => Err(CodecError::Decode("empty checkpoint payload".into())),
        }
    }
}

/// A chain of payloads applied in order: the messages stored so far, each
/// thread's ids, and the newest small state.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// Every message stored in the chain, by id.
    pub(crate) messages: HashMap<MessageId, Arc<Message>, IdHash>,
    /// Every thread there is, by path (parents sort before children).
    pub threads: BTreeMap<ThreadPath, Vec<MessageId>>,
    /// The newest small state.
    pub head: Vec<u8>,
}

impl Folded {
    /// Applies the next payload of the chain (a whole one starts over).
    pub fn apply(&mut self, delta: bool, payload: ChainPayload) {
        if !delta {
            self.messages.clear();
            self.threads.clear();
        }
        for m in payload.messages {
            self.messages.insert(m.id, m);
        }
        for (path, op) in payload.threads {
            match op {
                ThreadOp::Append(ids) => self.threads.entry(path).or_default().extend(ids),
                ThreadOp::Replace(ids) => {
                    self.threads.insert(path, ids);
                }
                ThreadOp::Remove => {
                    self.threads.remove(&path);
                }
            }
        }
        self.head = payload.head;
    }

    /// One whole payload equal to the chain applied so far: the messages
    /// some thread or the small state may name, every thread replaced.
    pub fn to_payload(&self) -> ChainPayload {
        let mut messages: Vec<Arc<Message>> = self.messages.values().cloned().collect();
        // A stable order, so compacting the same chain twice gives the same bytes.
        messages.sort_unstable_by_key(|m| m.id);
        ChainPayload {
            messages,
            threads: self
                .threads
                .iter()
                .map(|(p, ids)| (p.clone(), ThreadOp::Replace(ids.clone())))
                .collect(),
            head: self.head.clone(),
        }
    }

    /// The message with id `id`, if the chain stored it.
    pub fn message(&self, id: &MessageId) -> Option<&Arc<Message>> {
        self.messages.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_folds_to_its_end() {
        let (a, b, c) = (
            Arc::new(Message::user("a")),
            Arc::new(Message::text("x", "b")),
            Arc::new(Message::text("y", "c")),
        );
        let full = ChainPayload {
            messages: vec![a.clone()],
            threads: vec![(vec![], ThreadOp::Replace(vec![a.id]))],
            head: b"one".to_vec(),
        };
        let delta = ChainPayload {
            messages: vec![b.clone(), c.clone()],
            threads: vec![
                (vec![], ThreadOp::Append(vec![b.id])),
                (vec!["x".into()], ThreadOp::Append(vec![a.id, b.id])),
                (vec!["y".into()], ThreadOp::Replace(vec![c.id])),
            ],
            head: b"two".to_vec(),
        };
        let gone = ChainPayload {
            threads: vec![(vec!["y".into()], ThreadOp::Remove)],
            head: b"three".to_vec(),
            ..ChainPayload::default()
        };
        let mut folded = Folded::default();
        for (is_delta, p) in [(false, full), (true, delta), (true, gone)] {
            let bytes = p.encode(is_delta).unwrap();
            let (d, back) = ChainPayload::decode(&bytes).unwrap();
            assert_eq!(d, is_delta);
            folded.apply(d, back);
        }
        assert_eq!(folded.threads[&vec![]], vec![a.id, b.id]);
        assert_eq!(folded.threads[&vec!["x".to_string()]], vec![a.id, b.id]);
        assert!(!folded.threads.contains_key(&vec!["y".to_string()]));
        assert_eq!(folded.head, b"three");
        let mut again = Folded::default();
        again.apply(false, folded.to_payload());
        assert_eq!(again.threads, folded.threads);
        assert_eq!(again.messages.len(), 3);
        assert!(ChainPayload::decode(b"Zjunk").is_err());
        assert!(ChainPayload::decode(b"").is_err());
    }

    /// The small state is written as one byte string: the same bytes as
    /// the byte-by-byte sequence format 5 was first written with.
    #[test]
    fn the_head_is_written_as_a_byte_sequence_was() {
        #[derive(Serialize)]
        struct AsSeq<'a> {
            messages: Vec<Arc<Message>>,
            threads: Vec<(ThreadPath, ThreadOp)>,
            head: &'a Vec<u8>,
        }
        let head: Vec<u8> = (0..=255u8).chain(0..40).collect();
        let a = Message::user("a");
        let p = ChainPayload {
            messages: vec![Arc::new(a.clone())],
            threads: vec![(vec!["x".into()], ThreadOp::Append(vec![a.id]))],
            head: head.clone(),
        };
        let old = codec::encode(&AsSeq {
            messages: p.messages.clone(),
            threads: p.threads.clone(),
            head: &head,
        })
        .unwrap();
        assert_eq!(p.encode(true).unwrap()[1..], old[..]);
        let mut tagged = vec![DELTA_TAG];
        tagged.extend_from_slice(&old);
        assert_eq!(ChainPayload::decode(&tagged).unwrap().1.head, head);
    }
}
