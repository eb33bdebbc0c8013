//! The conversations a [`SqliteStore`] read or wrote last, kept decoded,
//! so a chatbot's next turn does not decode its whole thread again.
//!
//! A session's thread grows by every turn, and a served turn loads it,
//! runs, and saves it: decoding the record was the largest cost of a
//! long session's turn (at 400 turns, a third of the server's CPU). The
//! store keeps the last [`ENTRIES`] threads (up to [`BYTES`] of records),
//! as it saved or loaded them, and answers a load from here when the
//! database has not changed under it.
//!
//! Whether it has is SQLite's `PRAGMA data_version`, read on the store's
//! connection before every answer: it changes when any other connection
//! (another process, or another store on the same file) commits. Then
//! everything kept is forgotten, whatever that commit touched. The
//! store's own writes to the `threads` table go through the cache as they
//! commit, under the connection's lock, so a kept thread is always the
//! row as it is.
//!
//! A [`Thread`] shares its messages (`Arc`s), so an entry costs its
//! vectors of pointers while the thread is also in use, and its messages
//! once it is not.
//!
//! [`SqliteStore`]: super::SqliteStore

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::checkpoint::thread_record::EncodedThread;
use crate::thread::Thread;

/// Most threads kept.
pub(super) const ENTRIES: usize = 64;
/// Most bytes of records kept (a thread's record length stands for its
/// size); a thread whose record is larger is not kept.
pub(super) const BYTES: usize = 8 << 20;

/// Threads by conversation, with the database version they are true at.
#[derive(Debug, Default)]
pub(super) struct ThreadCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The `data_version` read last; `None` before the first read.
    version: Option<i64>,
    entries: HashMap<Box<str>, Entry>,
    /// The record bytes of the entries.
    bytes: usize,
    /// Counts uses, for the least recently used entry.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    thread: Thread,
    /// What its record was made of, when it was saved (not loaded).
    encoded: Option<Arc<EncodedThread>>,
    bytes: usize,
    used: u64,
}

impl ThreadCache {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every change below leaves the map whole, so a panic elsewhere
        // while it was held leaves a good cache.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes the database's `data_version` as just read; a value other
    /// than the last one means another connection committed: everything
    /// kept is forgotten.
    pub(super) fn at_version(&self, version: i64) {
        let mut inner = self.inner();
        if inner.version != Some(version) {
            inner.entries.clear();
            inner.bytes = 0;
            inner.version = Some(version);
        }
    }

    /// A copy of the thread kept for `conversation`, if any.
    pub(super) fn get(&self, conversation: &str) -> Option<Thread> {
        let mut inner = self.inner();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.entries.get_mut(conversation)?;
        entry.used = now;
        Some(entry.thread.clone())
    }

    /// What the record of `conversation`'s thread was last made of, to
    /// make the next one from.
    pub(super) fn encoded(&self, conversation: &str) -> Option<Arc<EncodedThread>> {
        self.inner().entries.get(conversation)?.encoded.clone()
    }

    /// Keeps `thread` (its record `bytes` long, made of `encoded` when it
    /// was saved) as `conversation`'s, making room by forgetting the least
    /// recently used.
    pub(super) fn put(
        &self,
        conversation: &str,
        thread: Thread,
        encoded: Option<EncodedThread>,
        bytes: usize,
    ) {
        let bytes = bytes + encoded.as_ref().map_or(0, EncodedThread::size);
        let mut inner = self.inner();
        if let Some(old) = inner.entries.remove(conversation) {
            inner.bytes -= old.bytes;
        }
        if bytes > BYTES {
            return;
        }
        while inner.entries.len() >= ENTRIES || inner.bytes + bytes > BYTES {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(gone) = inner.entries.remove(&oldest) {
                inner.bytes -= gone.bytes;
            }
        }
        inner.clock += 1;
        let used = inner.clock;
        inner.bytes += bytes;
        inner.entries.insert(
            conversation.into(),
            Entry {
                thread,
                encoded: encoded.map(Arc::new),
                bytes,
                used,
            },
        );
    }

    /// Forgets `conversation`'s thread.
    pub(super) fn forget(&self, conversation: &str) {
        let mut inner = self.inner();
        if let Some(old) = inner.entries.remove(conversation) {
            inner.bytes -= old.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn thread(text: &str) -> Thread {
        Thread::from_messages([Message::user(text)])
    }

    #[test]
    fn a_new_version_forgets_everything_and_the_oldest_makes_room() {
        let cache = ThreadCache::default();
        cache.at_version(1);
        let a = thread("a");
        cache.put("a", a.clone(), None, 10);
        assert_eq!(cache.get("a"), Some(a));
        cache.at_version(1);
        assert!(cache.get("a").is_some(), "same version: kept");
        cache.at_version(2);
        assert_eq!(cache.get("a"), None, "another connection wrote");

        for i in 0..ENTRIES {
            cache.put(&i.to_string(), thread("x"), None, 1);
        }
        // "0" used last, so "1" is the one to go.
        assert!(cache.get("0").is_some());
        cache.put("new", thread("new"), None, 1);
        assert!(cache.get("1").is_none());
        assert!(cache.get("0").is_some() && cache.get("new").is_some());

        // Bytes bound too: one record over the bound is not kept at all.
        cache.put("huge", thread("huge"), None, BYTES + 1);
        assert!(cache.get("huge").is_none());
        cache.put("big", thread("big"), None, BYTES);
        assert!(cache.get("big").is_some());
        assert!(cache.get("0").is_none(), "made room for the big one");
        cache.forget("big");
        assert!(cache.get("big").is_none());
        assert_eq!(cache.inner().bytes, 0);
    }
}
