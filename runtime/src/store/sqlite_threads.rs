//! [`ThreadStore`] for a [`SqliteStore`]: one row per conversation in
//! `threads`, its thread encoded as a checksummed record; the threads
//! read or written last kept decoded (`thread_cache`).
//!
//! A load the cache answers is done on the calling thread when the
//! connection is free: one `PRAGMA data_version` (is the cache still
//! true?) and a copy of the thread, nothing handed to the blocking pool.
//! A save encodes the record from the last one's encodings
//! (`thread_record`), and commits a record of up to 64 KiB on the calling
//! thread as a small checkpoint is (`SqliteStore::write_here`).

use std::time::SystemTime;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::error::StoreError;
use super::key::check_conversation_id;
use super::sqlite::SqliteStore;
use super::sqlite_rows::sql_error;
use super::thread_cache::ThreadCache;
use super::traits::ThreadStore;
use super::unix_time::to_unix;
use crate::checkpoint::thread_record::{EncodedThread, decode_thread, encode_thread_after};
use crate::thread::Thread;

/// The database's `data_version`: another value than last time means
/// another connection committed meanwhile.
fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))
}

impl SqliteStore {
    /// `conversation`'s thread from the cache, read on the calling thread:
    /// `None` when the connection is busy, the database is locked (a read
    /// waits on another process only while it recovers the WAL: then the
    /// blocking pool waits, not this thread), or the cache does not have
    /// it (the caller then reads the row).
    fn cached_here(&self, conversation: &str) -> Option<Thread> {
        let cache = self.thread_cache();
        self.here(|conn| kept(conn, cache, conversation))?
            .ok()
            .flatten()
    }
}

/// The thread the cache keeps for `conversation`, once `data_version`
/// says it is still true; the connection held.
fn kept(
    conn: &Connection,
    cache: &ThreadCache,
    conversation: &str,
) -> rusqlite::Result<Option<Thread>> {
    cache.at_version(data_version(conn)?);
    Ok(cache.get(conversation))
}

/// Reads `conversation`'s row (or the cache, if it is still true), the
/// connection held.
fn load(
    conn: &Connection,
    db: &str,
    cache: &ThreadCache,
    conversation: &str,
) -> Result<Option<Thread>, StoreError> {
    let err = sql_error(db);
    if let Some(thread) = kept(conn, cache, conversation).map_err(&err)? {
        return Ok(Some(thread));
    }
    let record: Option<Vec<u8>> = conn
        .prepare_cached("SELECT record FROM threads WHERE conversation = ?1")
        .and_then(|mut s| s.query_row(params![conversation], |r| r.get(0)))
        .optional()
        .map_err(&err)?;
    let Some(record) = record else {
        return Ok(None);
    };
    let thread = decode_thread(
        &record,
        &format!("conversation '{conversation}' in SQLite database '{db}'"),
    )?;
    cache.put(conversation, thread.clone(), None, record.len());
    Ok(Some(thread))
}

/// What the cache keeps of a thread saved: the thread and its record's
/// encodings.
type Keep = Option<(Thread, EncodedThread)>;

/// Writes `conversation`'s row and, the connection held, changes the
/// cache with it: `keep` is kept when the row is written (and left where
/// it is when it is not, for another try), the entry forgotten when not.
fn write_row(
    conn: &Connection,
    cache: &ThreadCache,
    conversation: &str,
    record: &[u8],
    keep: &mut Keep,
) -> rusqlite::Result<()> {
    let now = to_unix(SystemTime::now()).0;
    let written = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO threads (conversation, record, updated_secs) \
             VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut s| s.execute(params![conversation, record, now]));
    match written {
        Ok(_) => {
            if let Some((thread, encoded)) = keep.take() {
                cache.put(conversation, thread, Some(encoded), record.len());
            }
            Ok(())
        }
        Err(e) => {
            cache.forget(conversation);
            Err(e)
        }
    }
}

#[async_trait]
impl ThreadStore for SqliteStore {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        check_conversation_id(conversation)?;
        if let Some(thread) = self.cached_here(conversation) {
            return Ok(Some(thread));
        }
        let conversation = conversation.to_string();
        let cache = self.thread_cache().clone();
        self.with_conn(move |conn, db| load(conn, db, &cache, &conversation))
            .await
    }

    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        check_conversation_id(conversation)?;
        // Encoded here, not in the blocking task, from what the last
        // save's record was made of; the copy the cache keeps shares the
        // messages.
        let cache = self.thread_cache().clone();
        let before = cache.encoded(conversation);
        let (record, encoded) = encode_thread_after(thread, conversation, before.as_deref())?;
        let mut keep = Some((thread.clone(), encoded));
        let bytes = record.len();
        // A small record is written at once when nothing makes it wait.
        match self.write_here(bytes, |conn| {
            write_row(conn, &cache, conversation, &record, &mut keep)
        }) {
            Some(written) => written?,
            None => {
                let conversation = conversation.to_string();
                self.with_conn(move |conn, db| {
                    write_row(conn, &cache, &conversation, &record, &mut keep)
                        .map_err(sql_error(db))
                })
                .await?
            }
        }
        self.committed(bytes);
        Ok(())
    }

    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        check_conversation_id(conversation)?;
        let conversation = conversation.to_string();
        let cache = self.thread_cache().clone();
        self.with_conn(move |conn, db| {
            cache.forget(&conversation);
            let n = conn
                .execute(
                    "DELETE FROM threads WHERE conversation = ?1",
                    params![conversation],
                )
                .map_err(sql_error(db))?;
            Ok(n > 0)
        })
        .await
    }

    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        self.strings("SELECT conversation FROM threads ORDER BY conversation")
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[tokio::test]
    async fn a_thread_another_connection_wrote_is_read_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        let ours = SqliteStore::open(&path).unwrap();
        let other = SqliteStore::open(&path).unwrap();
        let one = Thread::from_messages([Message::user("one")]);
        ours.save_thread("c", &one).await.unwrap();
        assert_eq!(ours.load_thread("c").await.unwrap(), Some(one.clone()));
        assert!(ours.thread_cache().get("c").is_some(), "kept as saved");

        // Another process (here another connection) changes it: the
        // next load reads the row, not the copy kept.
        let two = Thread::from_messages([Message::user("one"), Message::text("writer", "two")]);
        other.save_thread("c", &two).await.unwrap();
        assert_eq!(ours.load_thread("c").await.unwrap(), Some(two.clone()));
        other.delete_thread("c").await.unwrap();
        assert_eq!(ours.load_thread("c").await.unwrap(), None);

        // Our own delete and a save that fails leave nothing stale.
        ours.save_thread("d", &one).await.unwrap();
        ours.delete_thread("d").await.unwrap();
        assert_eq!(ours.load_thread("d").await.unwrap(), None);
        ours.save_thread("e", &one).await.unwrap();
        ours.with_conn(|c, _| {
            c.execute_batch(
                "CREATE TRIGGER no_save BEFORE INSERT ON threads \
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap();
            Ok(())
        })
        .await
        .unwrap();
        assert!(ours.save_thread("e", &two).await.is_err());
        assert_eq!(ours.load_thread("e").await.unwrap(), Some(one));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_save_waits_while_another_process_holds_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        let store = SqliteStore::open(&path).unwrap();
        let blocker = Connection::open(&path).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE;").unwrap();
        let thread = Thread::from_messages([Message::user("hi")]);
        let waiting = {
            let (store, thread) = (store.clone(), thread.clone());
            tokio::spawn(async move { store.save_thread("c", &thread).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "the save did not wait for the lock");
        blocker.execute_batch("COMMIT;").unwrap();
        waiting.await.unwrap().unwrap();
        assert_eq!(store.load_thread("c").await.unwrap(), Some(thread.clone()));
        // Read by another process, as it was saved.
        let other = SqliteStore::open(&path).unwrap();
        assert_eq!(other.load_thread("c").await.unwrap(), Some(thread));
    }
}
