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
//! The body of version 5 keeps each message once: a child thread (an
//! agent's own) names a message the thread itself holds by its place in
//! it, as `Top(place)`, and keeps only its other messages whole
//! (`Own(message)`). A served team's agents each hear every message of the
//! session, so a record of version 4, which wrote each message in every
//! thread holding it, was four times as long for a team of three, and
//! every save and load paid for that. Read back, those messages are shared
//! again, not copies. Version 4's body (`codec(Thread)`) still reads.
//!
//! A session's thread grows by a few messages a turn, and is saved whole
//! after each. [`encode_thread_after`] makes the record from the
//! [`EncodedThread`] of the last save: the messages of a thread (or of a
//! child thread) that begins with every message encoded last time are
//! copied as bytes, and only the new ones are encoded (a child's only
//! while the thread itself still begins with what it held, as the places
//! they name are in it). The record is byte for byte what [`encode_thread`]
//! makes, but where a child held a message before the thread itself did
//! (that one stays `Own`: the same thread when read back).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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

/// The version of a thread record's body: 5, a thread whose children name
/// the messages it holds by place (the module doc); 4 was a [`Thread`]'s
/// encoding, which checkpoint format 5 left as format 4 had it.
pub(crate) const THREAD_FORMAT_VERSION: u32 = 5;

/// The body of version 4, still read.
const THREAD_FORMAT_WHOLE: u32 = 4;

/// A thread as a version 5 body keeps it (as serde writes it).
#[derive(Deserialize)]
struct StoredThread {
    messages: Vec<Entry>,
    children: BTreeMap<String, StoredThread>,
    state: Option<crate::thread::WorkflowState>,
}

/// A message of a version 5 body.
#[derive(Deserialize)]
enum Entry {
    /// Kept whole.
    Own(Arc<Message>),
    /// The message at this place in the top thread.
    Top(u64),
}

/// [`Entry`], borrowed, to write one.
#[derive(Serialize)]
enum EntryRef<'a> {
    Own(&'a Message),
    Top(u64),
}

/// Where each message of the top thread sits in it, by address.
type Places = HashMap<usize, u64>;

fn address(m: &Arc<Message>) -> usize {
    Arc::as_ptr(m) as usize
}

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
    /// Of the top thread: where its messages sit (empty in a child).
    places: Places,
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
    let encoded = encode_top(thread, before, &mut out).map_err(|source| StoreError::Encode {
        what: format!("thread of conversation '{conversation}'"),
        source,
    })?;
    let sum = checksum(&out[THREAD_PREFIX..]);
    out[12..THREAD_PREFIX].copy_from_slice(&sum.to_le_bytes());
    Ok((out, encoded))
}

/// Writes the version 5 body of top thread `thread` at the end of `out`,
/// reusing `before`.
fn encode_top(
    thread: &Thread,
    before: Option<&EncodedThread>,
    out: &mut Vec<u8>,
) -> Result<EncodedThread, CodecError> {
    let messages = thread.messages();
    // The children's reused bytes name places in the thread as it was: so
    // nothing is reused unless it still begins with those messages.
    let kept = before.filter(|b| begins_with(messages, b));
    let mut places = kept.map(|b| b.places.clone()).unwrap_or_default();
    let from = kept.map_or(0, |b| b.messages.len());
    places.reserve(messages.len() - from);
    for (i, m) in messages.iter().enumerate().skip(from) {
        places.entry(address(m)).or_insert(i as u64);
    }
    let mut encoded = encode_body(thread, kept, &places, true, out)?;
    encoded.places = places;
    Ok(encoded)
}

/// Whether `messages` begins with every message `before` encoded.
fn begins_with(messages: &[Arc<Message>], before: &EncodedThread) -> bool {
    before.messages.len() <= messages.len()
        && before
            .messages
            .iter()
            .zip(messages)
            .all(|(a, b)| Arc::ptr_eq(a, b))
}

/// Writes `thread` (the top thread when `top`, else one under it) at the
/// end of `out` as serde would write a [`StoredThread`] (its messages,
/// children and state, in that order): each message `Own`, or `Top` where
/// `places` (the top thread's) has it and this is not the top; reusing
/// `before` where the thread still begins with its messages.
fn encode_body(
    thread: &Thread,
    before: Option<&EncodedThread>,
    places: &Places,
    top: bool,
    out: &mut Vec<u8>,
) -> Result<EncodedThread, CodecError> {
    let messages = thread.messages();
    let (mut bytes, from) = match before.filter(|b| begins_with(messages, b)) {
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
        let entry = match places.get(&address(m)) {
            Some(&place) if !top => EntryRef::Top(place),
            _ => EntryRef::Own(m),
        };
        codec::encode_into(&entry, &mut bytes)?;
    }
    codec::encode_into(&(messages.len() as u64), out)?;
    out.extend_from_slice(&bytes);
    codec::encode_into(&(thread.children().len() as u64), out)?;
    let mut children = BTreeMap::new();
    for (name, child) in thread.children() {
        codec::encode_into(name, out)?;
        let before = before.and_then(|b| b.children.get(name));
        children.insert(
            name.clone(),
            encode_body(child, before, places, false, out)?,
        );
    }
    codec::encode_into(&thread.state(), out)?;
    Ok(EncodedThread {
        messages: messages.to_vec(),
        bytes,
        children,
        places: Places::new(),
    })
}

/// The thread a version 5 body keeps: `top` is the top thread's messages
/// (`None` for the top thread itself).
fn thread_of(stored: StoredThread, top: Option<&[Arc<Message>]>) -> Result<Thread, String> {
    let mut messages = Vec::with_capacity(stored.messages.len());
    for entry in stored.messages {
        messages.push(match (entry, top) {
            (Entry::Own(m), _) => m,
            (Entry::Top(place), Some(top)) => usize::try_from(place)
                .ok()
                .and_then(|p| top.get(p))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "a message names place {place} of the top thread, which holds {}",
                        top.len()
                    )
                })?,
            (Entry::Top(place), None) => {
                return Err(format!("the top thread names a place in itself ({place})"));
            }
        });
    }
    let mut thread = Thread::new();
    for (name, child) in stored.children {
        let child = thread_of(child, Some(top.unwrap_or(&messages)))?;
        thread.children_mut().insert(name, Box::new(child));
    }
    thread.extend_shared(messages);
    *thread.state_mut() = stored.state;
    Ok(thread)
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
    match version {
        THREAD_FORMAT_VERSION => codec::decode::<StoredThread>(body)
            .map_err(|e| e.to_string())
            .and_then(|stored| thread_of(stored, None))
            .map_err(|e| StoreError::corrupt(what, e)),
        THREAD_FORMAT_WHOLE => {
            codec::decode(body).map_err(|e| StoreError::corrupt(what, format!("{e}")))
        }
        found => Err(StoreError::UnsupportedVersion {
            what: what.to_string(),
            found,
            expected: THREAD_FORMAT_VERSION,
        }),
    }
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

        // Records of the first layout, and of the second with version 4's
        // body (each message in every thread holding it), still read, and
        // are checked.
        let t = session(3);
        let body = codec::encode(&t).unwrap();
        for (magic, sum) in [
            (THREAD_MAGIC_FNV, legacy_checksum(&body)),
            (THREAD_MAGIC, checksum(&body)),
        ] {
            let mut old = magic.to_vec();
            old.extend_from_slice(&THREAD_FORMAT_WHOLE.to_le_bytes());
            old.extend_from_slice(&sum.to_le_bytes());
            old.extend_from_slice(&body);
            assert_eq!(decode_thread(&old, "c").unwrap(), t);
            damage_is_caught(&old);
        }
    }

    #[test]
    fn a_message_the_thread_and_its_children_share_is_stored_once_and_shared_again() {
        let t = session(20);
        let rec = encode_thread(&t, "c").unwrap();
        let whole = codec::encode(&t).unwrap();
        assert!(
            rec.len() * 4 < whole.len() * 3,
            "{} bytes, against {} with each message in every thread",
            rec.len(),
            whole.len()
        );
        let back = decode_thread(&rec, "c").unwrap();
        assert_eq!(back, t);
        let reply = &back.child("a").unwrap().messages()[0];
        let top = back.messages().iter().find(|m| m.id == reply.id).unwrap();
        assert!(Arc::ptr_eq(reply, top), "read back as one message, shared");
        // A message the thread does not hold is kept whole in the child.
        assert_eq!(back.child("a").unwrap().child("tool").unwrap().len(), 10);
        damage_is_caught(&encode_thread(&session(2), "c").unwrap());
    }

    #[test]
    fn a_place_outside_the_top_thread_is_an_error_not_a_panic() {
        let stored = |messages, children| StoredThread {
            messages,
            children,
            state: None,
        };
        let child = stored(vec![Entry::Top(5)], BTreeMap::new());
        let top = stored(
            vec![Entry::Own(Arc::new(Message::user("hi")))],
            BTreeMap::from([("a".to_string(), child)]),
        );
        let err = thread_of(top, None).unwrap_err();
        assert!(err.contains("place 5") && err.contains("holds 1"), "{err}");
        let err = thread_of(stored(vec![Entry::Top(0)], BTreeMap::new()), None).unwrap_err();
        assert!(err.contains("names a place in itself"), "{err}");
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
