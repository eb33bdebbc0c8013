//! The ids of a thread's messages, so a message enters a thread once.
//!
//! A new message's id is almost always the newest (ids count up in the
//! process that makes them), so most threads hold their messages in
//! ascending id order: then a larger id than the last is known absent
//! without a look, and any other is found by a binary search — no index
//! kept at all, however long the thread (a run's thread of a 10,000-way
//! fan-out, a long chat session). A thread whose ids arrive out of order
//! (messages of another process, a checkpoint's) is searched while short;
//! past [`INDEXED_FROM`] messages its ids are in a set. A team's threads
//! are short and many (one per participant of each run, thousands of runs
//! waiting at once): a set grown for each cost more than it saved, and a
//! search through cold messages for every new one cost a cache miss per
//! message.

use std::collections::HashSet;
use std::sync::Arc;

use crate::message::{IdHash, Message, MessageId};

/// Past this many messages a thread whose ids are out of order keeps them
/// in a set.
pub(super) const INDEXED_FROM: usize = 16;

/// The ids of a thread's messages (see the module's documentation).
#[derive(Debug, Clone, Default)]
pub(super) struct Ids {
    /// Whether some message came in below an earlier one's id (else the
    /// messages are in ascending id order).
    unordered: bool,
    /// Every id, for a thread out of order past [`INDEXED_FROM`]
    /// messages. Boxed: most threads have none, and every thread (one per
    /// participant of every run, each child of a session) carries the
    /// field (48 bytes inline, 8 boxed).
    #[allow(clippy::box_collection)]
    set: Option<Box<HashSet<MessageId, IdHash>>>,
}

impl Ids {
    /// Whether `id` is the id of one of `messages` (the thread's).
    pub(super) fn contains(&self, id: MessageId, messages: &[Arc<Message>]) -> bool {
        if !self.unordered {
            return match messages.last() {
                Some(last) if id < last.id => messages.binary_search_by_key(&id, |m| m.id).is_ok(),
                Some(last) => id == last.id,
                None => false,
            };
        }
        match &self.set {
            Some(set) => set.contains(&id),
            // Newest first: a repeat is most often a recent message.
            None => messages.iter().rev().any(|m| m.id == id),
        }
    }

    /// Notes `id`, not among `before` (the thread's messages before it).
    pub(super) fn add(&mut self, id: MessageId, before: &[Arc<Message>]) {
        if !self.unordered {
            if before.last().is_none_or(|last| last.id < id) {
                return;
            }
            self.unordered = true;
        }
        match &mut self.set {
            Some(set) => {
                set.insert(id);
            }
            None if before.len() >= INDEXED_FROM => {
                let mut set = set_of(before);
                set.insert(id);
                self.set = Some(Box::new(set));
            }
            None => {}
        }
    }

    /// The ids of `kept`, once the messages before them, `gone`, were let
    /// go (messages in ascending order stay so).
    pub(super) fn forget(&mut self, gone: &[Arc<Message>], kept: &[Arc<Message>]) {
        match &mut self.set {
            Some(set) if kept.len() > INDEXED_FROM => {
                for m in gone {
                    set.remove(&m.id);
                }
            }
            _ => self.set = None,
        }
    }

    /// Whether the ids are kept in a set, and how many.
    #[cfg(test)]
    pub(super) fn indexed(&self) -> Option<usize> {
        self.set.as_ref().map(|set| set.len())
    }
}

/// A set of the ids of `messages`, with room to grow.
fn set_of(messages: &[Arc<Message>]) -> HashSet<MessageId, IdHash> {
    let mut set = HashSet::with_capacity_and_hasher(2 * messages.len(), IdHash::default());
    set.extend(messages.iter().map(|m| m.id));
    set
}
