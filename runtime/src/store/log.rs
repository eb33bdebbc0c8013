//! The append-only checkpoint log of a run (`FileStore`, format 5 on): one
//! record per checkpoint, appended in one `write`, so a save costs what it
//! writes. The record's layout, and reading records out of a log's bytes,
//! are the checkpoint format's (`checkpoint/log_record.rs`); this file
//! reads, appends to, repairs and rewrites the file.
//!
//! A record cut short at the end of the log (the process died while
//! appending it) is ignored: the log ends with the record before (a torn
//! tail). A damaged record anywhere else ends what can be read of the log
//! too, and is reported ([`Log::damage`]): the records before it stay
//! readable. Before anything is appended, [`append`] cuts the log after
//! its last whole record (a damaged log is first copied aside), so a
//! record is never appended after broken bytes, where no read would find
//! it. Saving a checkpoint id again appends it again: the last record of
//! an id wins.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::path::Path;

use super::error::StoreError;
use crate::checkpoint::log_record::{Damage, LOG_MAGIC, Located, encode_record, locate};
use crate::checkpoint::record::{Checkpoint, CheckpointId};

/// Names a log in errors.
pub(crate) fn log_what(path: &Path) -> String {
    format!("checkpoint log '{}'", path.display())
}

/// What [`append`] (or [`repair`]) found wrong with a log and did about
/// it before appending: the bytes after its last whole record cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repair {
    /// The log.
    pub(crate) path: std::path::PathBuf,
    /// Where its last whole record ends (where it was cut).
    pub(crate) at: u64,
    /// How many bytes were cut off.
    pub(crate) dropped: u64,
    /// Why: a torn last record, or damage (then the whole log was copied
    /// aside first, to `set_aside`).
    pub(crate) damage: Damage,
    /// Where the damaged log was copied before it was cut.
    pub(crate) set_aside: Option<std::path::PathBuf>,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "checkpoint log '{}' repaired: dropped {} bytes after byte {} (",
            self.path.display(),
            self.dropped,
            self.at
        )?;
        match &self.damage {
            Damage::Torn => write!(f, "a record cut short by a crash")?,
            Damage::Bad(reason) => write!(f, "{reason}")?,
        }
        if let Some(copy) = self.set_aside.as_ref().and_then(|c| c.file_name()) {
            // Next to the log: its name is enough.
            write!(f, "; the damaged log is kept as {}", copy.to_string_lossy())?;
        }
        write!(f, ")")
    }
}

/// Makes the log at `path` end after its last whole record: if its length
/// is not `known` (where this store's last append or repair left it), it
/// is read and, if anything follows its last whole record, cut there (a
/// damaged log is copied aside first). Returns the log's length and what
/// was repaired. A missing log has length 0.
pub(crate) fn repair(
    path: &Path,
    known: Option<u64>,
    fsync: bool,
) -> Result<(u64, Option<Repair>), StoreError> {
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok((0, None)),
        Err(e) => return Err(StoreError::io("open", path, e)),
    };
    cut_to_whole(path, &file, known, fsync)
}

/// [`repair`] on an open log.
fn cut_to_whole(
    path: &Path,
    mut file: &std::fs::File,
    known: Option<u64>,
    fsync: bool,
) -> Result<(u64, Option<Repair>), StoreError> {
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
    if Some(len) == known || len == 0 {
        return Ok((len, None));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| StoreError::io("read", path, e))?;
    let scan = locate(&bytes);
    let good = scan.good_end as u64;
    let Some(damage) = scan.damage else {
        return Ok((len, None));
    };
    let set_aside = match &damage {
        Damage::Torn => None,
        Damage::Bad(_) => {
            let copy = damaged_copy_path(path);
            std::fs::write(&copy, &bytes).map_err(|e| StoreError::io("copy aside", &copy, e))?;
            Some(copy)
        }
    };
    file.set_len(good)
        .map_err(|e| StoreError::io("truncate", path, e))?;
    if fsync {
        file.sync_all()
            .map_err(|e| StoreError::io("fsync", path, e))?;
    }
    let repair = Repair {
        path: path.to_path_buf(),
        at: good,
        dropped: len - good,
        damage,
        set_aside,
    };
    tracing::warn!(target: "troupe::store", "{repair}");
    Ok((good, Some(repair)))
}

/// A name next to the log for a copy of it, not yet taken.
fn damaged_copy_path(path: &Path) -> std::path::PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = path
        .file_name()
        .map_or_else(|| "log".into(), |n| n.to_string_lossy().into_owned());
    let mut n = 0u32;
    loop {
        let copy = path.with_file_name(format!("{name}.damaged-{secs}-{n}"));
        if !copy.exists() {
            return copy;
        }
        n += 1;
    }
}

/// Appends `record` to the log at `path` (created with its magic bytes if
/// missing), flushed to the disk if `fsync`. `known` is the length this
/// store's last append or repair left the log at: if the log has another
/// length, whatever follows its last whole record is cut off first (see
/// [`repair`]). Returns the log's new length and what was repaired.
pub(crate) fn append(
    path: &Path,
    record: &[u8],
    fsync: bool,
    known: Option<u64>,
) -> Result<(u64, Option<Repair>), StoreError> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| StoreError::io("open", path, e))?;
    let (len, repaired) = cut_to_whole(path, &file, known, fsync)?;
    if len == 0 {
        // One write: a log is never seen without its magic bytes.
        let mut first = Vec::with_capacity(LOG_MAGIC.len() + record.len());
        first.extend_from_slice(LOG_MAGIC);
        first.extend_from_slice(record);
        file.write_all(&first)
    } else {
        file.write_all(record)
    }
    .map_err(|e| StoreError::io("append to", path, e))?;
    if fsync {
        file.sync_data()
            .map_err(|e| StoreError::io("fsync", path, e))?;
        if len == 0
            && let Some(dir) = path.parent()
        {
            super::atomic::sync_dir(dir)?;
        }
    }
    let magic = if len == 0 { LOG_MAGIC.len() as u64 } else { 0 };
    Ok((len + magic + record.len() as u64, repaired))
}

/// A log read into memory: its bytes, and where the last record of each
/// checkpoint id is in them. Payloads are copied out only for the
/// checkpoints asked for, so finding the newest one or a chain costs one
/// pass over the log, not a copy of every payload in it.
#[derive(Debug, Default)]
pub(crate) struct Log {
    bytes: Vec<u8>,
    /// The last record of each id, sorted by id.
    records: Vec<Located>,
    /// What follows the last whole record, if anything does.
    damage: Option<Damage>,
    /// Where the last whole record ends.
    good_end: usize,
}

/// Which version of a log file a read saw: its file (device and inode),
/// its length and when it was last written. Unix only; elsewhere a log is
/// never known unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Version {
    /// The version of a file with metadata `meta` holding `len` bytes.
    #[cfg(unix)]
    pub(crate) fn of(meta: &std::fs::Metadata, len: u64) -> Option<Version> {
        use std::os::unix::fs::MetadataExt;
        Some(Version {
            dev: meta.dev(),
            ino: meta.ino(),
            len,
            mtime: (meta.mtime(), meta.mtime_nsec()),
        })
    }

    /// The version of a file with metadata `meta` holding `len` bytes.
    #[cfg(not(unix))]
    pub(crate) fn of(_meta: &std::fs::Metadata, _len: u64) -> Option<Version> {
        None
    }
}

impl Log {
    /// The log at `path` and which version of the file it is (none if
    /// there is no log): the same version means the same bytes, since a
    /// log is only appended to or replaced whole (by a rename).
    pub(crate) fn read_versioned(path: &Path) -> Result<(Log, Option<Version>), StoreError> {
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok((Log::default(), None)),
            Err(e) => return Err(StoreError::io("open", path, e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("read", path, e))?;
        let version = Version::of(&meta, bytes.len() as u64);
        Ok((Log::from_bytes(bytes), version))
    }

    /// The log in `bytes`.
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Log {
        let scan = locate(&bytes);
        let mut by_id = std::collections::BTreeMap::new();
        for located in scan.records {
            by_id.insert(located.meta.id, located);
        }
        Log {
            bytes,
            records: by_id.into_values().collect(),
            damage: scan.damage,
            good_end: scan.good_end,
        }
    }

    /// Damage before the log's end, described (a torn tail, normal after
    /// a crash, is not damage): the records after it cannot be read.
    pub(crate) fn damage(&self) -> Option<String> {
        match &self.damage {
            Some(Damage::Bad(reason)) => Some(format!(
                "{reason}: {} bytes from byte {} on cannot be read",
                self.bytes.len() - self.good_end,
                self.good_end
            )),
            _ => None,
        }
    }

    /// The last record of each id, sorted by id.
    pub(crate) fn records(&self) -> &[Located] {
        &self.records
    }

    /// The last record of checkpoint `id`.
    pub(crate) fn get(&self, id: &CheckpointId) -> Option<&Located> {
        self.records
            .binary_search_by(|r| r.meta.id.cmp(id))
            .ok()
            .map(|i| &self.records[i])
    }

    /// The checkpoint a record holds (its payload copied out, not verified).
    pub(crate) fn checkpoint(&self, record: &Located) -> Checkpoint {
        let payload = self
            .bytes
            .get(record.payload.clone())
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        Checkpoint::from_parts(record.meta.clone(), payload)
    }

    /// Every checkpoint of the log, by id (the last record of each).
    pub(crate) fn checkpoints(&self) -> Vec<Checkpoint> {
        self.records.iter().map(|r| self.checkpoint(r)).collect()
    }
}

/// Writes a log holding exactly `checkpoints` in place of the one at
/// `path`, atomically (a crash leaves the old log or the new one).
pub(crate) fn rewrite(path: &Path, checkpoints: &[Checkpoint]) -> Result<(), StoreError> {
    let mut bytes = LOG_MAGIC.to_vec();
    for cp in checkpoints {
        bytes.extend_from_slice(&encode_record(cp)?);
    }
    super::atomic::write_atomic(path, &[&bytes])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::log_record::scan;

    fn log(cps: &[Checkpoint]) -> Vec<u8> {
        let mut bytes = LOG_MAGIC.to_vec();
        for cp in cps {
            bytes.extend_from_slice(&encode_record(cp).unwrap());
        }
        bytes
    }

    #[test]
    fn a_torn_tail_is_ignored_and_damage_before_it_ends_the_log() {
        let a = Checkpoint::new("r", None, 1, 2, vec![1; 40]);
        let b = Checkpoint::new("r", Some(a.id), 2, 2, vec![2; 40]);
        let bytes = log(&[a.clone(), b.clone()]);
        assert_eq!(scan(&bytes), (vec![a.clone(), b.clone()], None));
        let first_end = log(std::slice::from_ref(&a)).len();
        // Every cut inside the second record leaves the first.
        for cut in first_end + 1..bytes.len() {
            assert_eq!(
                scan(&bytes[..cut]),
                (vec![a.clone()], Some(Damage::Torn)),
                "cut {cut}"
            );
        }
        for cut in 1..8 {
            assert_eq!(scan(&bytes[..cut]), (vec![], Some(Damage::Torn)));
        }
        // A flipped byte in the last record is a torn tail; in the first,
        // damage that ends the log before it.
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(scan(&bad), (vec![a.clone()], Some(Damage::Torn)));
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        let (cps, damage) = scan(&bad);
        assert!(cps.is_empty());
        assert!(
            matches!(&damage, Some(Damage::Bad(r)) if r.contains("byte 8")),
            "{damage:?}"
        );
        let log = Log::from_bytes(bad);
        assert!(log.damage().unwrap().contains("from byte 8 on"));
        let mut bad = bytes;
        bad[0] = b'X';
        assert!(matches!(scan(&bad).1, Some(Damage::Bad(_))));
    }

    #[test]
    fn append_cuts_a_torn_tail_and_sets_damage_aside_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoints.log");
        let a = Checkpoint::new("r", None, 1, 2, vec![1; 40]);
        let b = Checkpoint::new("r", Some(a.id), 2, 2, vec![2; 40]);
        let c = Checkpoint::new("r", Some(b.id), 3, 2, vec![3; 40]);
        let (rec_a, rec_b, rec_c) = (
            encode_record(&a).unwrap(),
            encode_record(&b).unwrap(),
            encode_record(&c).unwrap(),
        );
        let (len, none) = append(&path, &rec_a, false, None).unwrap();
        assert!(none.is_none());
        let (len, _) = append(&path, &rec_b, false, Some(len)).unwrap();
        // A crash cut the last record: the next append goes after `a`.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len - 7).unwrap();
        let (_, repaired) = append(&path, &rec_c, false, Some(len)).unwrap();
        let repaired = repaired.unwrap();
        assert_eq!(repaired.dropped, rec_b.len() as u64 - 7);
        assert_eq!(repaired.damage, Damage::Torn);
        assert!(repaired.to_string().contains("dropped"), "{repaired}");
        let (cps, damage) = scan(&std::fs::read(&path).unwrap());
        assert_eq!((cps, damage), (vec![a.clone(), c.clone()], None));
        // Damage in the middle: the log is kept aside, cut before it.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[12] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let (_, repaired) = repair(&path, None, true).unwrap();
        let repaired = repaired.unwrap();
        assert!(matches!(repaired.damage, Damage::Bad(_)));
        let aside = repaired.set_aside.clone().unwrap();
        assert_eq!(std::fs::read(aside).unwrap(), bytes);
        assert_eq!(std::fs::read(&path).unwrap(), LOG_MAGIC.to_vec());
        // Nothing to repair: nothing done.
        assert_eq!(repair(&path, None, false).unwrap(), (8, None));
    }
}
