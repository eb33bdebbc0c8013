//! The two store traits — [`CheckpointStore`] for runs, [`ThreadStore`]
//! for conversations — and their implementations for shared stores.

use std::sync::Arc;

use async_trait::async_trait;

use super::durability::Durability;
use super::error::StoreError;
use super::failure::RunFailure;
use super::lineage::Lineage;
use super::save_errors::SaveErrors;
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};
use crate::thread::Thread;

/// Where checkpoints of workflow runs are kept.
///
/// Checkpoints are grouped by run id and ordered by [`CheckpointId`], which
/// orders them by creation. Saving a checkpoint whose id is already stored
/// replaces it. Unknown runs and ids are not errors: they load as `None`
/// and list as empty.
///
/// A checkpoint may be a delta against its parent
/// ([`Checkpoint::kind`]): [`chain`](CheckpointStore::chain) gives the
/// checkpoints it needs, and [`load_whole`](super::load_whole) folds them
/// into one. `delete` and `prune` never leave a delta without its base:
/// the delta that would lose it is made whole first.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Saves a checkpoint as given (replacing one with the same run and
    /// id). Its checksum is checked when it is loaded, not here, so damage
    /// done before the save is reported the same way as damage in storage.
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError>;

    /// Loads one checkpoint of a run. A checkpoint whose payload does not
    /// match its checksum is a [`StoreError::Corrupt`].
    async fn load(&self, run_id: &str, id: &CheckpointId)
    -> Result<Option<Checkpoint>, StoreError>;

    /// Loads the newest checkpoint of a run (verified like [`load`]).
    ///
    /// [`load`]: CheckpointStore::load
    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError>;

    /// Lists a run's checkpoints, oldest first, without their payloads.
    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError>;

    /// Deletes one checkpoint; returns whether it existed.
    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError>;

    /// Deletes all but the newest `keep_last` checkpoints of a run; returns
    /// how many were deleted.
    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError>;

    /// The runs that have at least one checkpoint, sorted.
    async fn runs(&self) -> Result<Vec<String>, StoreError>;

    /// Gives the space of deleted checkpoints and conversations back to the
    /// file system (SQLite: `VACUUM`); stores that free it as they delete do
    /// nothing.
    async fn compact(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Checkpoint `id` and those it is a delta against, back to a whole
    /// one, oldest first (each verified like [`load`]). A whole
    /// checkpoint's chain is itself; an unknown id's is empty. The default
    /// loads one parent after another; stores override it with one read.
    ///
    /// [`load`]: CheckpointStore::load
    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        let mut chain = Vec::new();
        let mut next = Some(*id);
        while let Some(id) = next {
            let Some(cp) = self.load(run_id, &id).await? else {
                break;
            };
            // Parents are older: a parent that is not stops the walk (the
            // chain then starts with a delta and is refused), never a loop.
            next = match cp.kind() {
                CheckpointKind::Delta => cp.parent.filter(|p| *p < cp.id),
                CheckpointKind::Full => None,
            };
            chain.push(cp);
        }
        chain.reverse();
        Ok(chain)
    }

    /// How durable a saved checkpoint is (see [`Durability`]); the engine
    /// reads it to know whether to checkpoint before a run stops.
    fn durability(&self) -> Durability {
        Durability::Process
    }

    /// What a run does when a checkpoint cannot be saved here (see
    /// [`SaveErrors`]; by default it fails).
    fn save_errors(&self) -> SaveErrors {
        SaveErrors::Fail
    }

    /// Damage in a run's storage that hides checkpoints saved after it (a
    /// record of a log damaged before its end), described; `None` when
    /// every checkpoint saved can be read, or the store cannot tell
    /// without reading every payload. A run with damage is listed as
    /// unreadable; resuming it carries on from the newest checkpoint
    /// before the damage.
    async fn damage(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        let _ = run_id;
        Ok(None)
    }

    /// Makes a run's storage safe to append to before a run carries on:
    /// a log is cut after its last whole record (a record torn by a
    /// crash, or damage, and what follows it; a damaged log is copied
    /// aside first). Returns what was repaired, naming the bytes dropped;
    /// `None` if nothing was (stores whose writes are atomic never need
    /// it).
    async fn repair(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        let _ = run_id;
        Ok(None)
    }

    /// Where run `run_id` was forked from (see [`Lineage`]); `None` for a
    /// run that was not forked, and in stores that keep no lineage (the
    /// default).
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        let _ = run_id;
        Ok(None)
    }

    /// Keeps where run `run_id` was forked from, beside (never in) the
    /// checkpoints; returns whether the store keeps lineage at all (by
    /// default it does not, and this does nothing).
    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        let _ = (run_id, lineage);
        Ok(false)
    }

    /// How run `run_id` failed, when it failed after its latest
    /// checkpoint (see [`RunFailure`]); `None` for a run that did not, and
    /// in stores that keep no failures (the default).
    async fn failure(&self, run_id: &str) -> Result<Option<RunFailure>, StoreError> {
        let _ = run_id;
        Ok(None)
    }

    /// Keeps that run `run_id` failed, beside its checkpoints (taking its
    /// lease again to carry it on forgets it); returns whether the store
    /// keeps failures at all (by default it does not, and this does
    /// nothing).
    async fn save_failure(&self, run_id: &str, failure: &RunFailure) -> Result<bool, StoreError> {
        let _ = (run_id, failure);
        Ok(false)
    }
}

/// Where chatbot conversations are kept: one [`Thread`] per conversation id.
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// Loads a conversation's thread; `None` if it was never saved (or was
    /// deleted).
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError>;

    /// Saves a conversation's thread, replacing what was there.
    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError>;

    /// Deletes a conversation; returns whether it existed.
    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError>;

    /// The stored conversation ids, sorted.
    async fn conversations(&self) -> Result<Vec<String>, StoreError>;
}

// A shared store is a store, so one store can serve the engine and a
// `Session` at once.
#[async_trait]
impl<T: CheckpointStore + ?Sized> CheckpointStore for Arc<T> {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        (**self).save(checkpoint).await
    }
    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        (**self).load(run_id, id).await
    }
    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        (**self).latest(run_id).await
    }
    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        (**self).list(run_id).await
    }
    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        (**self).delete(run_id, id).await
    }
    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        (**self).prune(run_id, keep_last).await
    }
    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        (**self).runs().await
    }
    async fn compact(&self) -> Result<(), StoreError> {
        (**self).compact().await
    }
    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        (**self).chain(run_id, id).await
    }
    fn durability(&self) -> Durability {
        (**self).durability()
    }
    fn save_errors(&self) -> SaveErrors {
        (**self).save_errors()
    }
    async fn damage(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        (**self).damage(run_id).await
    }
    async fn repair(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        (**self).repair(run_id).await
    }
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        (**self).lineage(run_id).await
    }
    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        (**self).save_lineage(run_id, lineage).await
    }
    async fn failure(&self, run_id: &str) -> Result<Option<RunFailure>, StoreError> {
        (**self).failure(run_id).await
    }
    async fn save_failure(&self, run_id: &str, failure: &RunFailure) -> Result<bool, StoreError> {
        (**self).save_failure(run_id, failure).await
    }
}

#[async_trait]
impl<T: ThreadStore + ?Sized> ThreadStore for Arc<T> {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        (**self).load_thread(conversation).await
    }
    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        (**self).save_thread(conversation, thread).await
    }
    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        (**self).delete_thread(conversation).await
    }
    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        (**self).conversations().await
    }
}
