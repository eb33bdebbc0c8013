//! [`FileStore`]: checkpoints and conversations as files under one root
//! directory.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

mod legacy;
mod lineage_file;
use legacy::check_identity;

use super::atomic::{is_hidden, remove_stale_temps, sync_dir, write_atomic};
use super::chain::{keep_bases_before_delete, keep_bases_before_prune};
use super::durability::Durability;
use super::error::StoreError;
use super::key::{check_conversation_id, check_run_id};
use super::lineage::{self, Lineage};
use super::log::{self, Log};
use super::save_errors::SaveErrors;
use super::traits::{CheckpointStore, ThreadStore};
use crate::checkpoint::log_record::encode_record;
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointKind, CheckpointMeta};
use crate::checkpoint::thread_record::{decode_thread, encode_thread};
use crate::thread::Thread;

const CHECKPOINT_EXT: &str = ".ckpt";
const LOG_NAME: &str = "checkpoints.log";
const THREAD_EXT: &str = ".thread";
/// Largest record `save` appends on the calling thread at
/// [`Durability::Process`]: bigger ones (and every `fsync`) go to tokio's
/// blocking pool.
const INLINE_APPEND: usize = 64 * 1024;
/// How many logs' lengths a store remembers (see `FileStore::lengths`).
const KNOWN_LOGS: usize = 4096;

/// A store of files under a root directory:
///
/// ```text
/// <root>/checkpoints/<run id>/checkpoints.log       the run's checkpoints, appended (format 5 on)
/// <root>/checkpoints/<run id>/<checkpoint id>.ckpt  one file per checkpoint (before format 5; still read)
/// <root>/threads/<conversation id>.thread           one file per conversation
/// <root>/lineage/<run id>.json                      where a forked run came from
/// ```
///
/// A checkpoint is one record appended to its run's log (`store/log.rs`):
/// a save costs what it writes. [`Durability::Process`] (the default)
/// hands the record to the OS before `save` returns, so it survives the
/// process being killed; [`Durability::Fsync`] also flushes it to the disk
/// (`fsync`) and survives power loss. A record cut short at the end of a
/// log (a crash mid-append) is ignored; a damaged record before the end
/// ends what can be read of the log, never decoded into wrong values, and
/// is reported by [`CheckpointStore::damage`]. Before a save appends to a
/// log this store did not leave as it is, and when a run resumes
/// ([`CheckpointStore::repair`]), the log is cut after its last whole
/// record (a damaged one copied aside first, as
/// `checkpoints.log.damaged-…`), so no record is ever appended where no
/// read would find it. `delete` and `prune` rewrite the log atomically
/// (and refuse a damaged one). Conversations
/// (and the checkpoint files of earlier versions) are written atomically:
/// a hidden temporary file, flushed, renamed into place, directory flushed.
///
/// Blocking file I/O runs on tokio's blocking pool, but for the append of
/// a checkpoint of up to 64 KiB at [`Durability::Process`]: a write into
/// the page cache, made on the calling thread. Several processes may
/// share a root: writes never leave partial files, and the last write of a
/// conversation wins.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: Arc<PathBuf>,
    durability: Durability,
    save_errors: SaveErrors,
    /// The last log read, with its path and version (see `log`).
    last_log: Arc<Mutex<LastLog>>,
    /// The length each log this store appended to was left at: a log
    /// found at another length is checked (and repaired) before the next
    /// append.
    lengths: Arc<Mutex<HashMap<PathBuf, u64>>>,
}

/// The last checkpoint log a [`FileStore`] read.
type LastLog = Option<(PathBuf, log::Version, Arc<Log>)>;

impl FileStore {
    /// Opens (creating if needed) a store rooted at `root`, removing the
    /// temporary files that writes of a killed process left behind.
    ///
    /// Creating the directories is blocking I/O; call this at setup.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        for dir in [root.join("checkpoints"), root.join("threads")] {
            fs::create_dir_all(&dir).map_err(|e| StoreError::io("create directory", &dir, e))?;
        }
        remove_stale_temps(&root.join("threads"));
        if let Ok(runs) = fs::read_dir(root.join("checkpoints")) {
            for run in runs.flatten() {
                remove_stale_temps(&run.path());
            }
        }
        Ok(FileStore {
            root: Arc::new(root),
            durability: Durability::Process,
            save_errors: SaveErrors::Fail,
            last_log: Arc::default(),
            lengths: Arc::default(),
        })
    }

    /// The same store with durability `durability` (see [`Durability`]).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The same store with `save_errors` deciding what a run does when a
    /// checkpoint cannot be saved (see [`SaveErrors`]).
    pub fn with_save_errors(mut self, save_errors: SaveErrors) -> Self {
        self.save_errors = save_errors;
        self
    }

    /// The log holding a run's checkpoints.
    pub fn log_path(&self, run_id: &str) -> PathBuf {
        self.run_dir(run_id).join(LOG_NAME)
    }

    /// A run's log, read (the newest record of each checkpoint, by id).
    /// The last log read is kept: read again unchanged (same file, same
    /// length — a log is only appended to, or replaced by a rename), it is
    /// not read twice, so loading the newest checkpoint and then its chain
    /// reads the log once.
    fn log(&self, run_id: &str) -> Result<Arc<Log>, StoreError> {
        let path = self.log_path(run_id);
        let seen = fs::metadata(&path)
            .ok()
            .and_then(|m| log::Version::of(&m, m.len()));
        {
            let last = self.last_log.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((p, v, log)) = &*last
                && seen.is_some()
                && Some(*v) == seen
                && *p == path
            {
                return Ok(log.clone());
            }
        }
        let (log, version) = Log::read_versioned(&path)?;
        let log = Arc::new(log);
        if let Some(version) = version {
            *self.last_log.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((path, version, log.clone()));
        }
        Ok(log)
    }

    /// Checkpoint `id` of a run from its log, checked and verified.
    fn in_log(
        &self,
        run_id: &str,
        id: &CheckpointId,
        records: &Log,
    ) -> Result<Option<Checkpoint>, StoreError> {
        let Some(record) = records.get(id) else {
            return Ok(None);
        };
        let cp = records.checkpoint(record);
        let what = log::log_what(&self.log_path(run_id));
        check_identity(&cp.run_id, &cp.id, run_id, id, &what)?;
        cp.verify()
            .map_err(|e| StoreError::corrupt(what, e.to_string()))?;
        Ok(Some(cp))
    }

    /// Checkpoint `id` from the log, else from a file of an earlier version.
    fn find(
        &self,
        run_id: &str,
        id: &CheckpointId,
        records: &Log,
    ) -> Result<Option<Checkpoint>, StoreError> {
        match self.in_log(run_id, id, records)? {
            Some(cp) => Ok(Some(cp)),
            None => self.read_checkpoint(run_id, id),
        }
    }

    /// Every checkpoint id of a run, in the log or in files, sorted.
    fn all_ids(&self, run_id: &str, records: &Log) -> Result<Vec<CheckpointId>, StoreError> {
        let mut ids = self.ids(run_id)?;
        ids.extend(records.records().iter().map(|r| r.meta.id));
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Removes the checkpoints `doomed` of a run, from its log and files;
    /// returns how many there were.
    fn remove_all(&self, run_id: &str, doomed: &[CheckpointId]) -> Result<usize, StoreError> {
        let log = self.log(run_id)?;
        if let Some(damage) = log.damage() {
            // Rewriting would throw the damaged bytes away unseen: a
            // resume's repair keeps a copy of them first.
            return Err(StoreError::corrupt(
                log::log_what(&self.log_path(run_id)),
                damage,
            ));
        }
        let records = log.checkpoints();
        let before = records.len();
        let kept: Vec<Checkpoint> = records
            .into_iter()
            .filter(|c| !doomed.contains(&c.id))
            .collect();
        let mut removed = before - kept.len();
        if removed > 0 {
            *self.last_log.lock().unwrap_or_else(|p| p.into_inner()) = None;
            log::rewrite(&self.log_path(run_id), &kept)?;
        }
        let mut files = 0;
        for id in doomed {
            files += self.remove(run_id, id)? as usize;
        }
        if files > 0 {
            sync_dir(&self.run_dir(run_id))?;
        }
        removed += files;
        Ok(removed)
    }

    /// Appends `record` to a run's log (its directory made if missing),
    /// after cutting off whatever follows its last whole record (see
    /// `log::append`).
    fn append(&self, run_id: &str, record: &[u8], fsync: bool) -> Result<(), StoreError> {
        let path = self.log_path(run_id);
        let known = self.known_length(&path);
        let appended = match log::append(&path, record, fsync, known) {
            Err(StoreError::Io { .. }) if !self.run_dir(run_id).is_dir() => {
                let dir = self.run_dir(run_id);
                fs::create_dir_all(&dir)
                    .map_err(|e| StoreError::io("create directory", &dir, e))?;
                log::append(&path, record, fsync, known)
            }
            other => other,
        };
        let mut lengths = self.lengths.lock().unwrap_or_else(|p| p.into_inner());
        match appended {
            Ok((len, _repaired)) => {
                if lengths.len() >= KNOWN_LOGS && !lengths.contains_key(&path) {
                    // Forgetting costs only a read of a log before its
                    // next append: a long-lived store stays bounded.
                    lengths.clear();
                }
                lengths.insert(path, len);
                Ok(())
            }
            Err(e) => {
                // A failed write may have left part of the record: the
                // next append looks at the log again.
                lengths.remove(&path);
                Err(e)
            }
        }
    }

    /// The length this store left a log at, if it appended to it.
    fn known_length(&self, path: &Path) -> Option<u64> {
        self.lengths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .copied()
    }

    /// Cuts a run's log after its last whole record (see `log::repair`).
    fn repair_log(&self, run_id: &str) -> Result<Option<log::Repair>, StoreError> {
        let path = self.log_path(run_id);
        let fsync = self.durability == Durability::Fsync;
        // Read whatever its length: a resume reads the log anyway.
        let (len, repaired) = log::repair(&path, None, fsync)?;
        if len > 0 {
            self.lengths
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(path, len);
        }
        Ok(repaired)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding a run's checkpoints.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.root.join("checkpoints").join(run_id)
    }

    /// The file holding one checkpoint.
    pub fn checkpoint_path(&self, run_id: &str, id: &CheckpointId) -> PathBuf {
        self.run_dir(run_id).join(format!("{id}{CHECKPOINT_EXT}"))
    }

    /// The file holding a conversation's thread.
    pub fn thread_path(&self, conversation: &str) -> PathBuf {
        self.root
            .join("threads")
            .join(format!("{conversation}{THREAD_EXT}"))
    }

    /// Runs blocking file work off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&FileStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this)).await?
    }

    /// The ids of a run's checkpoint files, oldest first (from the names
    /// alone; files whose names are not ids are not ours and are skipped).
    fn ids(&self, run_id: &str) -> Result<Vec<CheckpointId>, StoreError> {
        let dir = self.run_dir(run_id);
        let mut ids: Vec<CheckpointId> = entry_names(&dir)?
            .iter()
            .filter_map(|n| n.strip_suffix(CHECKPOINT_EXT))
            .filter_map(|stem| stem.parse().ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn remove(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        let path = self.checkpoint_path(run_id, id);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("remove", &path, e)),
        }
    }
}

/// How errors name a file.
fn file_what(path: &Path) -> String {
    format!("file '{}'", path.display())
}

/// The visible entry names of a directory; none if it does not exist.
fn entry_names(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("read directory", dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", dir, e))?;
        // Names that are not UTF-8 were not written by this store.
        if let Ok(name) = entry.file_name().into_string()
            && !is_hidden(&name)
        {
            names.push(name);
        }
    }
    Ok(names)
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn lineage(&self, run_id: &str) -> Result<Option<Lineage>, StoreError> {
        check_run_id(run_id)?;
        let path = self.lineage_path(run_id);
        self.blocking(move |_| lineage_file::read(&path)).await
    }

    async fn save_lineage(&self, run_id: &str, lineage: &Lineage) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        let (path, bytes) = (self.lineage_path(run_id), lineage::encode(lineage));
        self.blocking(move |_| lineage_file::write(&path, &bytes))
            .await?;
        Ok(true)
    }

    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        check_run_id(&checkpoint.run_id)?;
        let record = encode_record(checkpoint)?;
        let fsync = self.durability == Durability::Fsync;
        if !fsync && record.len() <= INLINE_APPEND {
            // A small append that need not reach the disk is a copy into
            // the page cache: done here, as cheap as handing it to the
            // blocking pool, and the run does not wait for a thread to wake.
            return self.append(&checkpoint.run_id, &record, false);
        }
        let run_id = checkpoint.run_id.clone();
        self.blocking(move |s| s.append(&run_id, &record, fsync))
            .await
    }

    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let (run_id, id) = (run_id.to_string(), *id);
        self.blocking(move |s| s.find(&run_id, &id, &*s.log(&run_id)?))
            .await
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.blocking(move |s| {
            // A concurrent prune can remove the newest between listing and
            // reading it; look again rather than report a false `None`.
            for _ in 0..3 {
                let records = s.log(&run_id)?;
                let Some(id) = s.all_ids(&run_id, &records)?.pop() else {
                    return Ok(None);
                };
                if let Some(cp) = s.find(&run_id, &id, &records)? {
                    return Ok(Some(cp));
                }
            }
            Ok(None)
        })
        .await
    }

    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.blocking(move |s| {
            let records = s.log(&run_id)?;
            let mut out: Vec<CheckpointMeta> =
                records.records().iter().map(|r| r.meta.clone()).collect();
            for id in s.ids(&run_id)? {
                // Removed since the directory was read: not listed.
                if records.get(&id).is_none()
                    && let Some(meta) = s.read_meta(&run_id, &id)?
                {
                    out.push(meta);
                }
            }
            out.sort_by_key(|m| m.id);
            Ok(out)
        })
        .await
    }

    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_delete(self, run_id, id).await?;
        let (run_id, id) = (run_id.to_string(), *id);
        self.blocking(move |s| Ok(s.remove_all(&run_id, &[id])? > 0))
            .await
    }

    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        check_run_id(run_id)?;
        keep_bases_before_prune(self, run_id, keep_last).await?;
        let run_id = run_id.to_string();
        self.blocking(move |s| {
            let ids = s.all_ids(&run_id, &*s.log(&run_id)?)?;
            let excess = ids.len().saturating_sub(keep_last);
            if excess == 0 {
                return Ok(0);
            }
            s.remove_all(&run_id, &ids[..excess])
        })
        .await
    }

    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        check_run_id(run_id)?;
        let (run_id, id) = (run_id.to_string(), *id);
        // The log is read once for the whole chain.
        self.blocking(move |s| {
            let records = s.log(&run_id)?;
            let mut chain = Vec::new();
            let mut next = Some(id);
            while let Some(id) = next {
                let Some(cp) = s.find(&run_id, &id, &records)? else {
                    break;
                };
                next = match cp.kind() {
                    CheckpointKind::Delta => cp.parent.filter(|p| *p < cp.id),
                    CheckpointKind::Full => None,
                };
                chain.push(cp);
            }
            chain.reverse();
            Ok(chain)
        })
        .await
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    fn save_errors(&self) -> SaveErrors {
        self.save_errors
    }

    async fn damage(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.blocking(move |s| {
            let what = log::log_what(&s.log_path(&run_id));
            Ok(s.log(&run_id)?.damage().map(|d| format!("{what}: {d}")))
        })
        .await
    }

    async fn repair(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_string();
        self.blocking(move |s| Ok(s.repair_log(&run_id)?.map(|r| r.to_string())))
            .await
    }

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.blocking(|s| {
            // Run directories are kept when emptied (removing them would race
            // with a concurrent save into them), so a run counts only while
            // it holds a checkpoint.
            let mut runs = Vec::new();
            for name in entry_names(&s.root.join("checkpoints"))? {
                if check_run_id(&name).is_ok()
                    && (!s.ids(&name)?.is_empty() || {
                        let log = s.log(&name)?;
                        !log.records().is_empty() || log.damage().is_some()
                    })
                {
                    runs.push(name);
                }
            }
            runs.sort();
            Ok(runs)
        })
        .await
    }
}

#[async_trait]
impl ThreadStore for FileStore {
    async fn load_thread(&self, conversation: &str) -> Result<Option<Thread>, StoreError> {
        check_conversation_id(conversation)?;
        let path = self.thread_path(conversation);
        self.blocking(move |_| {
            let bytes = match fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(StoreError::io("read", &path, e)),
            };
            decode_thread(&bytes, &file_what(&path)).map(Some)
        })
        .await
    }

    async fn save_thread(&self, conversation: &str, thread: &Thread) -> Result<(), StoreError> {
        check_conversation_id(conversation)?;
        // Encoded here, not in the blocking task, so the thread is not cloned.
        let bytes = encode_thread(thread, conversation)?;
        let path = self.thread_path(conversation);
        self.blocking(move |_| write_atomic(&path, &[&bytes])).await
    }

    async fn delete_thread(&self, conversation: &str) -> Result<bool, StoreError> {
        check_conversation_id(conversation)?;
        let path = self.thread_path(conversation);
        self.blocking(move |s| match fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(&s.root.join("threads"))?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("remove", &path, e)),
        })
        .await
    }

    async fn conversations(&self) -> Result<Vec<String>, StoreError> {
        self.blocking(|s| {
            let mut ids: Vec<String> = entry_names(&s.root.join("threads"))?
                .into_iter()
                .filter_map(|n| n.strip_suffix(THREAD_EXT).map(str::to_string))
                .filter(|id| check_conversation_id(id).is_ok())
                .collect();
            ids.sort();
            Ok(ids)
        })
        .await
    }
}
