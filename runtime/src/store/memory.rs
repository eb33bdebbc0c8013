//! [`MemoryStore`]: checkpoints and conversations kept in the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;

use super::chain::{fold, keep_bases_before_delete};
use super::durability::Durability;
use super::error::StoreError;
use super::key::{check_conversation_id, check_run_id};
use super::lease::InProcessLeases;
use super::lineage::Lineage;
use super::result_cache::ResultCache;
use super::traits::{CheckpointStore, ThreadStore};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};
use crate::thread::Thread;

/// A store in memory: for tests, examples and runs that need not outlive
/// the process. Clones share the same data.
///
/// History is bounded: a run lists its newest [`DEFAULT_KEEP`] checkpoints
/// (change it with [`MemoryStore::keep_last`]); older ones leave the
/// listing in batches. Those the kept ones' chains still need (back to
/// their whole base) are held, unlisted, until a newer whole checkpoint
/// makes them unneeded — the engine writes a whole checkpoint once the
/// deltas since the last one outgrow it, so what is held stays within a
/// few times the run's state, and a save never folds a chain. Only a
/// chain of over `16 × keep` deltas (checkpoints made elsewhere) is folded
/// into a whole one, as [`prune`](CheckpointStore::prune) does. Durability
/// is the process's ([`Durability`](super::Durability) `exit` still saves
/// only when a run stops).
///
/// Locks are held only for map operations, never across an `.await`.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
    keep: usize,
    durability: Durability,
    /// Its run leases (see `lease.rs`), shared by its clones.
    pub(super) leases: InProcessLeases,
}

/// How many checkpoints per run a [`MemoryStore`] keeps by default.
pub const DEFAULT_KEEP: usize = 64;

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            inner: Arc::default(),
            keep: DEFAULT_KEEP,
            durability: Durability::Process,
            leases: InProcessLeases::default(),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    runs: RwLock<HashMap<String, Run>>,
    threads: RwLock<BTreeMap<String, Thread>>,
    /// Where forked runs came from.
    lineage: RwLock<HashMap<String, Lineage>>,
    /// Node results by key (see [`ResultCache`]).
    cache: RwLock<HashMap<String, Vec<u8>>>,
}

#[async_trait]
impl ResultCache for MemoryStore {
    async fn cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(read(&self.inner.cache).get(key).cloned())
    }

    async fn save_cached(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        write(&self.inner.cache).insert(key.to_string(), value.to_vec());
        Ok(())
    }
}

/// One run's checkpoints: those listed, and the older ones their chains
/// still need, held unlisted.
///
/// Boxed: a map's node holds 11 entries by value, so a run's few
/// checkpoints of ~140 bytes each took a 1.8 KiB node; boxed, ~0.4 KiB.
#[derive(Debug, Default)]
struct Run {
    listed: BTreeMap<CheckpointId, Box<Checkpoint>>,
    held: BTreeMap<CheckpointId, Box<Checkpoint>>,
}

impl Run {
    /// Checkpoint `id`, listed or held.
    fn get(&self, id: &CheckpointId) -> Option<&Checkpoint> {
        self.listed
            .get(id)
            .or_else(|| self.held.get(id))
            .map(|cp| &**cp)
    }

    /// The ids of checkpoint `id`'s chain, newest first, back to a whole
    /// one (or to a parent not stored: the chain is then refused on load).
    fn chain_ids(&self, id: CheckpointId) -> Vec<CheckpointId> {
        let mut ids = Vec::new();
        let mut next = Some(id);
        while let Some(id) = next {
            let Some(cp) = self.get(&id) else { break };
            ids.push(id);
            // Parents are older: never a loop.
            next = (cp.kind() == CheckpointKind::Delta)
                .then_some(cp.parent)
                .flatten()
                .filter(|p| *p < id);
        }
        ids
    }

    /// Moves all but the newest `keep` listed checkpoints out of the
    /// listing, holding those the oldest listed one's chain needs.
    /// Returns how many left the listing.
    fn unlist(&mut self, keep: usize) -> Result<usize, StoreError> {
        let excess = self.listed.len().saturating_sub(keep);
        if excess == 0 {
            return Ok(0);
        }
        let doomed: Vec<CheckpointId> = self.listed.keys().take(excess).copied().collect();
        for id in &doomed {
            if let Some(cp) = self.listed.remove(id) {
                self.held.insert(*id, cp);
            }
        }
        let Some(&oldest) = self.listed.keys().next() else {
            self.held.clear();
            return Ok(excess);
        };
        let needed = self.chain_ids(oldest);
        if needed.len() > keep.saturating_mul(16) {
            // Too long a chain to hold: the oldest listed becomes whole.
            make_whole(self, oldest, &needed)?;
            self.held.clear();
        } else {
            let base = needed.last().copied().unwrap_or(oldest);
            self.held.retain(|id, _| *id >= base);
        }
        Ok(excess)
    }
}

/// Replaces checkpoint `id` (listed) with its chain `ids` (newest first)
/// folded into one whole checkpoint.
fn make_whole(run: &mut Run, id: CheckpointId, ids: &[CheckpointId]) -> Result<(), StoreError> {
    let mut chain = Vec::with_capacity(ids.len());
    for cid in ids.iter().rev() {
        if let Some(cp) = run.get(cid) {
            cp.verify()?;
            chain.push(cp.clone());
        }
    }
    if let Some(whole) = fold(&chain)? {
        run.listed.insert(id, Box::new(whole));
    }
    Ok(())
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
fn trim(run: &mut Run, keep: usize) -> Result<usize, StoreError> {
    let excess = run.listed.len().saturating_sub(keep);
    if excess == 0 {
        return Ok(0);
    }
    let Some(&oldest_kept) = run.listed.keys().nth(excess) else {
        return Ok(0);
    };
    let ids = run.chain_ids(oldest_kept);
    if ids.len() > 1 {
        make_whole(run, oldest_kept, &ids)?;
    }
    run.held.clear();
    let doomed: Vec<CheckpointId> = run.listed.keys().take(excess).copied().collect();
    for id in &doomed {
        run.listed.remove(id);
    }
    Ok(doomed.len())
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        Ok(read(&self.inner.lineage).get(run_id).cloned())
    }

    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        write(&self.inner.lineage).insert(run_id.to_string(), lineage.clone());
        Ok(true)
    }

    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&checkpoint.run_id)?;
        let mut runs = write(&self.inner.runs);
        // The run's id copied once, not at every save.
        let run = match runs.get_mut(&checkpoint.run_id) {
            Some(run) => run,
            None => runs.entry(checkpoint.run_id.clone()).or_default(),
        };
        run.listed
            .insert(checkpoint.id, Box::new(checkpoint.clone()));
        // In batches: the chains are followed every `keep` saves, not every save.
        if run.listed.len() >= self.keep.saturating_mul(2) {
            run.unlist(self.keep)?;
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
            .and_then(|run| run.listed.get(id))
            .map(|cp| Checkpoint::clone(cp));
        verified(found)
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let found = read(&self.inner.runs)
            .get(run_id)
            .and_then(|run| run.listed.values().next_back())
            .map(|cp| Checkpoint::clone(cp));
        verified(found)
    }

    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        check_run_id(run_id)?;
        Ok(read(&self.inner.runs)
            .get(run_id)
            .map(|run| run.listed.values().map(|cp| cp.meta()).collect())
            .unwrap_or_default())
    }

    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_delete(self, run_id, id).await?;
        let mut runs = write(&self.inner.runs);
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(false);
        };
        let existed = run.listed.remove(id).is_some();
        if run.listed.is_empty() {
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
            let n = run.listed.len();
            *run = Run::default();
            n
        } else {
            trim(run, keep_last)?
        };
        if run.listed.is_empty() {
            runs.remove(run_id);
        }
        Ok(removed)
    }

    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let runs = read(&self.inner.runs);
        let Some(run) = runs.get(run_id) else {
            return Ok(Vec::new());
        };
        // The chain of a listed checkpoint; an unlisted one has none.
        if !run.listed.contains_key(id) {
            return Ok(Vec::new());
        }
        let mut chain = Vec::new();
        for cid in run.chain_ids(*id).iter().rev() {
            if let Some(cp) = run.get(cid) {
                cp.verify()?;
                chain.push(cp.clone());
            }
        }
        Ok(chain)
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
