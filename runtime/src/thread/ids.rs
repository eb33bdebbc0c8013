//! The ids of a thread's messages, so a message enters a thread once.
//!
//! A new message's id is almost always the newest (ids count up in the
//! process that makes them), so a thread keeps an upper bound of its ids and
//! a larger one is known absent without a look. A short thread is searched
//! otherwise; past [`INDEXED_FROM`] messages the ids are in a set. A team's
//! threads are short and many (one per participant of each run, thousands
//! of runs waiting at once): a set grown for each cost more than it saved,
//! and a search through cold messages for every new one cost a cache miss
//! per message.

use std::collections::HashSet;
use std::sync::Arc;

use crate::message::{IdHash, Message, MessageId};

/// Past this many messages a thread keeps its ids in a set.
pub(super) const INDEXED_FROM: usize = 16;

/// The ids of a thread's messages (see the module's documentation).
#[derive(Debug, Clone)]
pub(super) struct Ids {
    /// At least every id of the thread (`MessageId(0)` for none).
    bound: MessageId,
    /// Every id, past [`INDEXED_FROM`] messages.
    set: Option<HashSet<MessageId, IdHash>>,
}

impl Default for Ids {
    /// No ids. (Not `MessageId::default()`, which is a fresh id.)
    fn default() -> Self {
        Ids {
            bound: MessageId(0),
            set: None,
        }
    }
}

impl Ids {
    /// Whether `id` is the id of one of `messages` (the thread's).
    pub(super) fn contains(&self, id: MessageId, messages: &[Arc<Message>]) -> bool {
        if id > self.bound {
            return false;
        }
        match &self.set {
            Some(set) => set.contains(&id),
            // Newest first: a repeat is most often a recent message.
            None => messages.iter().rev().any(|m| m.id == id),
        }
    }

    /// Notes `id`, not among `before` (the thread's messages before it).
    pub(super) fn add(&mut self, id: MessageId, before: &[Arc<Message>]) {
        self.bound = self.bound.max(id);
        match &mut self.set {
            Some(set) => {
                set.insert(id);
            }
            None if before.len() >= INDEXED_FROM => {
                let mut set = set_of(before);
                set.insert(id);
                self.set = Some(set);
            }
            None => {}
        }
    }

    /// The ids of `kept`, once the messages before them, `gone`, were let
    /// go. (The bound still holds: it may stay above every id kept.)
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
        self.set.as_ref().map(HashSet::len)
    }
}

/// A set of the ids of `messages`, with room to grow.
fn set_of(messages: &[Arc<Message>]) -> HashSet<MessageId, IdHash> {
    let mut set = HashSet::with_capacity_and_hasher(2 * messages.len(), IdHash::default());
    set.extend(messages.iter().map(|m| m.id));
    set
}
