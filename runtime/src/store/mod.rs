//! Persistence: where checkpoints of runs and chatbot conversations live.
//!
//! Two traits, each implemented by three stores:
//!
//! - [`CheckpointStore`] keeps [`Checkpoint`]s of workflow runs: the engine
//!   encodes a run's state (the format is the crate's `checkpoint` module)
//!   after a superstep and saves it; resuming loads it back. A payload is
//!   guarded by a checksum that every store verifies when it loads a
//!   checkpoint; a store is not blind to it: a payload may be a delta on
//!   its parent, and the stores fold delta chains (`chain.rs`) and keep a
//!   delta's bases when pruning or deleting.
//! - [`ThreadStore`] keeps one [`Thread`](crate::Thread) per conversation,
//!   for chatbots (see [`crate::Session`]).
//!
//! | store | where | notes |
//! |---|---|---|
//! | [`MemoryStore`] | in the process | for tests and short-lived runs; clones share the data; the newest 64 checkpoints per run |
//! | [`FileStore`] | one append-only log per run, one file per conversation, under a root directory | a checkpoint is one appended record; conversations are written atomically |
//! | [`SqliteStore`] | one SQLite database (WAL mode, `synchronous=NORMAL`) | feature `sqlite`, on by default |
//! | `PostgresStore` | tables `troupe_*` in one PostgreSQL database, shared by many processes and machines | feature `postgres`; versioned migrations |
//!
//! A checkpoint is whole or a delta against its parent
//! ([`Checkpoint::kind`], format 5 on): [`load_whole`] loads one with its
//! chain folded. What a saved checkpoint survives is the store's
//! [`Durability`]: by default the process being killed; `fsync` power
//! loss too; `exit` checkpoints a run only when it stops.
//!
//! One process runs a run at a time: every store is also [`RunLeases`],
//! and whoever runs a run holds its [`RunLease`] (an advisory file lock,
//! a SQLite row with a heartbeat, or a table in the process; see
//! `lease.rs`).
//!
//! Run and conversation ids must be one safe path component in every
//! store (not empty, at most [`MAX_ID_LEN`] bytes, no `/`, `\`, control
//! character or leading `.`); others are refused with
//! [`StoreError::InvalidId`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe_runtime::store::{Checkpoint, CheckpointStore, FileStore, MemoryStore, ThreadStore};
//! use troupe_runtime::{Message, Thread};
//!
//! let store = MemoryStore::new();
//! let first = Checkpoint::new("run-1", None, 1, 0xabc, b"state after step 1".to_vec());
//! let second = Checkpoint::new("run-1", Some(first.id), 2, 0xabc, b"state after step 2".to_vec());
//! store.save(&first).await?;
//! store.save(&second).await?;
//! assert_eq!(store.latest("run-1").await?, Some(second.clone()));
//! assert_eq!(store.list("run-1").await?.len(), 2);
//! store.prune("run-1", 1).await?; // keep only the newest
//! assert_eq!(store.list("run-1").await?[0].id, second.id);
//!
//! // The same calls on files, in a directory of our own.
//! let dir = std::env::temp_dir().join(format!("troupe-doc-{}", std::process::id()));
//! let files = FileStore::open(&dir)?;
//! files.save_thread("chat-42", &Thread::from_messages([Message::user("hi")])).await?;
//! let thread = files.load_thread("chat-42").await?.expect("saved above");
//! assert_eq!(thread.len(), 1);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```

mod atomic;
mod board;
mod chain;
mod durability;
mod error;
mod failure;
mod file;
mod file_cache;
mod file_lock;
mod key;
mod lease;
mod lineage;
mod log;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod postgres_failure;
mod result_cache;
mod save_errors;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_cache;
#[cfg(feature = "sqlite")]
mod sqlite_gate;
#[cfg(feature = "sqlite")]
mod sqlite_lease;
#[cfg(feature = "sqlite")]
mod sqlite_lineage;
#[cfg(feature = "sqlite")]
mod sqlite_release;
#[cfg(feature = "sqlite")]
mod sqlite_rows;
#[cfg(feature = "sqlite")]
mod sqlite_threads;
#[cfg(feature = "sqlite")]
mod sqlite_wal;
#[cfg(feature = "sqlite")]
mod thread_cache;
mod traits;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod unix_time;

pub use crate::checkpoint::record::{
    Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta, checksum, legacy_checksum,
};
pub use board::{Ask, AskState, BoardRun, Control, Notice, RunBoard};
pub(crate) use chain::fold_chain;
pub use chain::{complete, fold, load_whole};
pub use durability::{Durability, UnknownDurability};
pub use error::StoreError;
pub use failure::RunFailure;
pub use file::FileStore;
pub(crate) use key::check_conversation_id;
pub use key::{MAX_ID_LEN, check_run_id};
pub use lease::{
    Abandoned, HEARTBEAT, InProcessLeases, LeaseError, LeaseHolder, RunLease, RunLeases,
    STALE_AFTER, this_host,
};
pub use lineage::Lineage;
pub use memory::{DEFAULT_KEEP, MemoryStore};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresBoard, PostgresOptions, PostgresStore, migrate_postgres};
pub use postgres_failure::PostgresFailure;
pub use result_cache::{ResultCache, stable_hash};
pub use save_errors::SaveErrors;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use traits::{CheckpointStore, ThreadStore};
