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
//!
//! From format 6 on ([`ID_RUNS_VERSION`]) a thread operation names the
//! messages of its own payload by place, in runs (`IdRun`): the eleven
//! threads a delta's one new message enters name it in three bytes each,
//! not seventeen, and a whole payload's threads — mostly the same
//! messages in the same order — in a few bytes each, not seventeen per
//! message. Messages stored before are still named by id.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::record::{DELTA_TAG, FULL_TAG};
use crate::checkpoint::codec::{self, CodecError, raw};
use crate::message::{IdHash, Message, MessageId};

/// Where a thread sits in a run's thread tree: the names of the children
/// on the way down from the run's thread (empty for the run's thread).
pub type ThreadPath = Vec<String>;

/// How a thread changed since the parent checkpoint.
///
/// Also written by hand from borrowed data (`snapshot_refs::OpRef`):
/// change the two together (`borrowed_payloads_are_chain_payload_bytes`
/// pins them).
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
///
/// Also written by hand from borrowed data (`snapshot_refs::PayloadRef`):
/// change the two together (`borrowed_payloads_are_chain_payload_bytes`
/// pins them).
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

/// The first format whose thread operations name their payload's
/// messages by place (runs, `IdRun`) and whose small state names inbox
/// contents by place in their thread.
pub const ID_RUNS_VERSION: u32 = 6;

/// Some of the messages a thread operation names, in order, in a payload
/// from format 6 on. Also written by hand ([`Runs::write`]): change the
/// two together (`threads_name_their_payloads_messages_in_runs` pins them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum IdRun {
    /// `count` messages of the payload itself, from its `from`th on.
    Stored {
        /// The place of the first in the payload's messages.
        from: u64,
        /// How many follow from there.
        count: u64,
    },
    /// Messages stored before in the chain, by id.
    Ids(Vec<MessageId>),
}

/// A thread operation's messages made into [`IdRun`]s, one after another
/// (kept flat, so a writer reusing it allocates nothing once warm).
#[derive(Debug, Default)]
pub(crate) struct Runs {
    runs: Vec<Run>,
    /// The ids of every [`Run::Ids`], one after another.
    ids: Vec<MessageId>,
}

/// An [`IdRun`] in [`Runs`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Run {
    Stored {
        from: u64,
        count: u64,
    },
    /// Ids `start..` up to the next run's start (or the end).
    Ids {
        start: usize,
        end: usize,
    },
}

/// An [`IdRun`] borrowed from [`Runs`], serialized as one.
#[derive(Serialize)]
enum IdRunRef<'a> {
    Stored { from: u64, count: u64 },
    Ids(&'a [MessageId]),
}

impl Runs {
    /// Starts over (keeping the room).
    pub(crate) fn clear(&mut self) {
        self.runs.clear();
        self.ids.clear();
    }

    /// Adds the next message: `at`, its place among the payload's
    /// messages, when it is one of them.
    pub(crate) fn push(&mut self, id: MessageId, at: Option<u64>) {
        match (at, self.runs.last_mut()) {
            (Some(i), Some(Run::Stored { from, count })) if from.checked_add(*count) == Some(i) => {
                *count += 1;
            }
            (Some(i), _) => self.runs.push(Run::Stored { from: i, count: 1 }),
            (None, Some(Run::Ids { end, .. })) => {
                self.ids.push(id);
                *end += 1;
            }
            (None, _) => {
                let start = self.ids.len();
                self.ids.push(id);
                self.runs.push(Run::Ids {
                    start,
                    end: start + 1,
                });
            }
        }
    }

    /// The runs, as [`IdRun`]s borrowing their ids.
    fn iter(&self) -> impl ExactSizeIterator<Item = IdRunRef<'_>> + '_ {
        self.runs.iter().map(|run| match *run {
            Run::Stored { from, count } => IdRunRef::Stored { from, count },
            Run::Ids { start, end } => IdRunRef::Ids(self.ids.get(start..end).unwrap_or_default()),
        })
    }

    /// Appends what serializing the runs as a `Vec<IdRun>` writes.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        raw::len(out, self.runs.len());
        for run in self.iter() {
            // The variants' indices of `IdRun`.
            match run {
                IdRunRef::Stored { from, count } => {
                    raw::variant(out, 0);
                    raw::u64(out, from);
                    raw::u64(out, count);
                }
                IdRunRef::Ids(ids) => {
                    raw::variant(out, 1);
                    raw::len(out, ids.len());
                    for id in ids {
                        raw::u128(out, id.0);
                    }
                }
            }
        }
    }

    /// The runs of `ids`, their places looked up in `places` (see
    /// [`places`]).
    fn of(ids: &[MessageId], places: &HashMap<MessageId, u64, IdHash>) -> Self {
        let mut runs = Runs::default();
        for id in ids {
            runs.push(*id, places.get(id).copied());
        }
        runs
    }
}

impl Serialize for Runs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// Where each of a payload's messages (their ids, in order) sits among
/// them: the first place of each id, as [`IdRun::Stored`] names it.
pub(crate) fn places(
    ids: impl ExactSizeIterator<Item = MessageId>,
) -> HashMap<MessageId, u64, IdHash> {
    let mut map = HashMap::with_capacity_and_hasher(ids.len(), IdHash::default());
    for (i, id) in ids.enumerate() {
        map.entry(id).or_insert(i as u64);
    }
    map
}

/// The ids `runs` name, the payload's own messages being `messages`.
fn ids_of(runs: Vec<IdRun>, messages: &[Arc<Message>]) -> Result<Vec<MessageId>, CodecError> {
    let mut ids = Vec::new();
    for run in runs {
        match run {
            IdRun::Stored { from, count } => {
                let named = usize::try_from(from)
                    .ok()
                    .zip(usize::try_from(count).ok())
                    .and_then(|(f, c)| messages.get(f..f.checked_add(c)?))
                    .ok_or_else(|| {
                        CodecError::Decode(format!(
                            "a thread names {count} messages from place {from} of a payload \
                             holding {}",
                            messages.len()
                        ))
                    })?;
                ids.extend(named.iter().map(|m| m.id));
            }
            IdRun::Ids(more) => ids.extend(more),
        }
    }
    Ok(ids)
}

/// A [`ThreadOp`] as format 6 writes it.
#[derive(Deserialize)]
enum WireOp {
    Append(Vec<IdRun>),
    Replace(Vec<IdRun>),
    Remove,
}

/// [`WireOp`] to write, its runs made.
#[derive(Serialize)]
enum WireOpOut {
    Append(Runs),
    Replace(Runs),
    Remove,
}

/// A [`ChainPayload`] as format 6 writes it.
#[derive(Serialize)]
struct WireOut<'a> {
    messages: &'a [Arc<Message>],
    threads: Vec<(&'a ThreadPath, WireOpOut)>,
    #[serde(with = "as_bytes")]
    head: &'a Vec<u8>,
}

/// [`WireOut`] read back.
#[derive(Deserialize)]
struct WireIn {
    messages: Vec<Arc<Message>>,
    threads: Vec<(ThreadPath, WireOp)>,
    #[serde(with = "as_bytes")]
    head: Vec<u8>,
}

impl ChainPayload {
    /// The payload's bytes as format `version` writes them: its tag, then
    /// its encoding.
    pub fn encode(&self, delta: bool, version: u32) -> Result<Vec<u8>, CodecError> {
        let mut out = vec![if delta { DELTA_TAG } else { FULL_TAG }];
        if version < ID_RUNS_VERSION {
            codec::encode_into(self, &mut out)?;
            return Ok(out);
        }
        let places = places(self.messages.iter().map(|m| m.id));
        let threads = self
            .threads
            .iter()
            .map(|(path, op)| {
                let op = match op {
                    ThreadOp::Append(ids) => WireOpOut::Append(Runs::of(ids, &places)),
                    ThreadOp::Replace(ids) => WireOpOut::Replace(Runs::of(ids, &places)),
                    ThreadOp::Remove => WireOpOut::Remove,
                };
                (path, op)
            })
            .collect();
        let wire = WireOut {
            messages: &self.messages,
            threads,
            head: &self.head,
        };
        codec::encode_into(&wire, &mut out)?;
        Ok(out)
    }

    /// Reads a tagged payload written by format `version`; says whether it
    /// is a delta.
    pub fn decode(bytes: &[u8], version: u32) -> Result<(bool, ChainPayload), CodecError> {
        let (delta, rest) = match bytes.split_first() {
            Some((&DELTA_TAG, rest)) => (true, rest),
            Some((&FULL_TAG, rest)) => (false, rest),
            Some((tag, _)) => {
                return Err(CodecError::Decode(format!(
                    "unknown checkpoint payload tag {tag:#04x}"
                )));
            }
            None => return Err(CodecError::Decode("empty checkpoint payload".into())),
        };
        if version < ID_RUNS_VERSION {
            return Ok((delta, codec::decode(rest)?));
        }
        let wire: WireIn = codec::decode(rest)?;
        let mut threads = Vec::with_capacity(wire.threads.len());
        for (path, op) in wire.threads {
            let op = match op {
                WireOp::Append(runs) => ThreadOp::Append(ids_of(runs, &wire.messages)?),
                WireOp::Replace(runs) => ThreadOp::Replace(ids_of(runs, &wire.messages)?),
                WireOp::Remove => ThreadOp::Remove,
            };
            threads.push((path, op));
        }
        let payload = ChainPayload {
            messages: wire.messages,
            threads,
            head: wire.head,
        };
        Ok((delta, payload))
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
        for version in [5, ID_RUNS_VERSION] {
            let mut folded = Folded::default();
            for (is_delta, p) in [(false, &full), (true, &delta), (true, &gone)] {
                let bytes = p.encode(is_delta, version).unwrap();
                let (d, back) = ChainPayload::decode(&bytes, version).unwrap();
                assert_eq!(d, is_delta);
                assert_eq!(back.threads, p.threads);
                folded.apply(d, back);
            }
            check(&folded, version, a.id, b.id);
        }
        assert!(ChainPayload::decode(b"Zjunk", 6).is_err());
        assert!(ChainPayload::decode(b"", 6).is_err());
    }

    fn check(folded: &Folded, version: u32, a: MessageId, b: MessageId) {
        assert_eq!(folded.threads[&vec![]], vec![a, b]);
        assert_eq!(folded.threads[&vec!["x".to_string()]], vec![a, b]);
        assert!(!folded.threads.contains_key(&vec!["y".to_string()]));
        assert_eq!(folded.head, b"three");
        let whole = folded.to_payload().encode(false, version).unwrap();
        let mut again = Folded::default();
        let (d, back) = ChainPayload::decode(&whole, version).unwrap();
        again.apply(d, back);
        assert_eq!(again.threads, folded.threads);
        assert_eq!(again.messages.len(), 3);
    }

    /// From format 6 on a thread names its payload's messages by place, in
    /// runs, and those stored before by id; a place the payload does not
    /// have is refused, named.
    #[test]
    fn threads_name_their_payloads_messages_in_runs() {
        let m: Vec<Arc<Message>> = (0..5)
            .map(|i| Arc::new(Message::user(format!("{i}"))))
            .collect();
        let old = Message::user("old").id;
        let ids = |idx: &[usize]| idx.iter().map(|&i| m[i].id).collect::<Vec<_>>();
        let mut mixed = ids(&[0, 1, 2]);
        mixed.extend([old, old]);
        mixed.extend(ids(&[4, 3]));
        let p = ChainPayload {
            messages: m.clone(),
            threads: vec![
                (vec![], ThreadOp::Replace(ids(&[0, 1, 2, 3, 4]))),
                (vec!["x".into()], ThreadOp::Append(mixed.clone())),
            ],
            head: Vec::new(),
        };
        let bytes = p.encode(false, ID_RUNS_VERSION).unwrap();
        assert_eq!(
            ChainPayload::decode(&bytes, ID_RUNS_VERSION)
                .unwrap()
                .1
                .threads,
            p.threads
        );
        let five = p.encode(false, 5).unwrap();
        assert!(
            bytes.len() + 16 * 5 + 15 * 5 < five.len(),
            "{} vs {}",
            bytes.len(),
            five.len()
        );
        let places: HashMap<MessageId, u64, IdHash> = m
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id, i as u64))
            .collect();
        let runs = Runs::of(&mixed, &places);
        let mut by_hand = Vec::new();
        runs.write(&mut by_hand);
        let want = vec![
            IdRun::Stored { from: 0, count: 3 },
            IdRun::Ids(vec![old, old]),
            IdRun::Stored { from: 4, count: 1 },
            IdRun::Stored { from: 3, count: 1 },
        ];
        assert_eq!(by_hand, codec::encode(&want).unwrap());
        assert_eq!(codec::encode(&runs).unwrap(), by_hand);
        // A run past the payload's messages.
        let mut bad = Runs::default();
        bad.push(old, Some(4));
        bad.push(old, Some(5));
        let mut wire = vec![FULL_TAG];
        codec::encode_into(
            &WireOut {
                messages: &m,
                threads: vec![(&vec![], WireOpOut::Append(bad))],
                head: &Vec::new(),
            },
            &mut wire,
        )
        .unwrap();
        let err = ChainPayload::decode(&wire, ID_RUNS_VERSION)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("names 2 messages from place 4 of a payload holding 5"),
            "{err}"
        );
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
        assert_eq!(p.encode(true, 5).unwrap()[1..], old[..]);
        let mut tagged = vec![DELTA_TAG];
        tagged.extend_from_slice(&old);
        assert_eq!(ChainPayload::decode(&tagged, 5).unwrap().1.head, head);
    }
}
