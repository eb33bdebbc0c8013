//! [`MemoryStore`]: checkpoints and conversations kept in the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;

use super::chain::{fold, keep_bases_before_delete};
use super::checkpoint::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};
use super::durability::Durability;
use super::error::StoreError;
use super::key::{check_conversation_id, check_run_id};
use super::traits::{CheckpointStore, ThreadStore};
use crate::thread::Thread;

/// A store in memory: for tests, examples and runs that need not outlive
/// the process. Clones share the same data.
///
/// History is bounded: a run keeps its newest [`DEFAULT_KEEP`] checkpoints
/// (change it with [`MemoryStore::keep_last`]); older ones are dropped in
/// batches, the oldest kept made whole first, so a save costs what it
/// adds and, amortized, a fold of the chain every `keep` saves. Durability
/// is the process's ([`Durability`](super::Durability) `exit` still saves
/// only when a run stops).
///
/// Locks are held only for map operations, never across an `.await`.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
    keep: usize,
    durability: Durability,
}

/// How many checkpoints per run a [`MemoryStore`] keeps by default.
pub const DEFAULT_KEEP: usize = 64;

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            inner: Arc::default(),
            keep: DEFAULT_KEEP,
            durability: Durability::Process,
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    runs: RwLock<HashMap<String, BTreeMap<CheckpointId, Checkpoint>>>,
    threads: RwLock<BTreeMap<String, Thread>>,
}

// A poisoned lock means a panic elsewhere mid-operation; every operation
// here leaves the maps consistent before it can panic, so the data is
// still good and the store keeps working.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// The same contract as the stores on disk: what comes back is verified,
/// so a checkpoint damaged before it was saved is caught here too.
fn verified(found: Option<Checkpoint>) -> Result<Option<Checkpoint>, StoreError> {
    if let Some(cp) = &found {
        cp.verify()?;
    }
    Ok(found)
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps the newest `keep` checkpoints of each run (at least 1;
    /// `usize::MAX` keeps all). Up to twice as many may be held between
    /// two trims.
    pub fn keep_last(mut self, keep: usize) -> Self {
        self.keep = keep.max(1);
        self
    }

    /// The same store with durability `durability`: only
    /// [`Durability::Exit`] changes anything here (runs checkpoint only
    /// when they stop); the others keep checkpoints in the process.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
}

/// Drops all but the newest `keep` checkpoints of `run`, the oldest kept
/// made whole first if it is a delta (so what is left loads alone).
fn trim(run: &mut BTreeMap<CheckpointId, Checkpoint>, keep: usize) -> Result<usize, StoreError> {
    let excess = run.len().saturating_sub(keep);
    if excess == 0 {
        return Ok(0);
    }
    let Some((&oldest_kept, cp)) = run.iter().nth(excess) else {
        return Ok(0);
    };
    if cp.kind() == CheckpointKind::Delta {
        // Its chain runs back at most to the first whole checkpoint.
        let mut chain = Vec::new();
        let mut next = Some(oldest_kept);
        while let Some(id) = next {
            let Some(cp) = run.get(&id) else { break };
            cp.verify()?;
            next = (cp.kind() == CheckpointKind::Delta)
                .then_some(cp.parent)
                .flatten();
            chain.push(cp.clone());
        }
        chain.reverse();
        if let Some(whole) = fold(&chain)? {
            run.insert(oldest_kept, whole);
        }
    }
    let doomed: Vec<CheckpointId> = run.keys().take(excess).copied().collect();
    for id in &doomed {
        run.remove(id);
    }
    Ok(doomed.len())
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&checkpoint.run_id)?;
        let mut runs = write(&self.inner.runs);
        let run = runs.entry(checkpoint.run_id.clone()).or_default();
        run.insert(checkpoint.id, checkpoint.clone());
        // Trimmed in batches: a fold every `keep` saves, not every save.
        if run.len() >= self.keep.saturating_mul(2) {
            trim(run, self.keep)?;
        }
        Ok(())
    }

    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let found = read(&self.inner.runs)
            .get(run_id)
            .and_then(|run| run.get(id))
            .cloned();
        verified(found)
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let found = read(&self.inner.runs)
            .get(run_id)
            .and_then(|run| run.values().next_back())
            .cloned();
        verified(found)
    }

    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        check_run_id(run_id)?;
        Ok(read(&self.inner.runs)
            .get(run_id)
            .map(|run| run.values().map(Checkpoint::meta).collect())
            .unwrap_or_default())
    }

    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_delete(self, run_id, id).await?;
        let mut runs = write(&self.inner.runs);
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(false);
        };
        let existed = run.remove(id).is_some();
        if run.is_empty() {
            runs.remove(run_id);
        }
        Ok(existed)
    }

    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        check_run_id(run_id)?;
        let mut runs = write(&self.inner.runs);
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(0);
        };
        let removed = if keep_last == 0 {
            let n = run.len();
            run.clear();
            n
        } else {
            trim(run, keep_last)?
        };
        if run.is_empty() {
            runs.remove(run_id);
        }
        Ok(removed)
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        let mut runs: Vec<String> = read(&self.inner.runs).keys().cloned().collect();
        runs.sort();
        Ok(runs)
    }
}

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        check_conversation_id(conversation)?;
        Ok(read(&self.inner.threads).get(conversation).cloned())
    }

    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        check_conversation_id(conversation)?;
        write(&self.inner.threads).insert(conversation.to_string(), thread.clone());
        Ok(())
    }

    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        check_conversation_id(conversation)?;
        Ok(write(&self.inner.threads).remove(conversation).is_some())
    }

    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        Ok(read(&self.inner.threads).keys().cloned().collect())
    }
}
