//! The append-only checkpoint log of a run (`FileStore`, format 5 on): one
//! record per checkpoint, appended in one `write`, so a save costs what it
//! writes.
//!
//! ```text
//! log:    "TRPLOG05" | record*
//! record: body length: u32 LE | crc32c(body): u32 LE | body
//! body:   meta length: u32 LE | codec(CheckpointMeta) | payload
//! ```
//!
//! A record cut short at the end of the log (the process died while
//! appending it) is ignored: the log ends with the record before. A
//! damaged record anywhere else is [`StoreError::Corrupt`] naming the log
//! and the offset. Saving a checkpoint id again appends it again: the
//! last record of an id wins.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::ops::Range;
use std::path::Path;

use super::checkpoint::{Checkpoint, CheckpointId, CheckpointMeta};
use super::error::StoreError;
use crate::codec;

/// The first bytes of a log.
pub(crate) const LOG_MAGIC: &[u8; 8] = b"TRPLOG05";
/// Bytes before a record's body.
const RECORD_PREFIX: usize = 8;
/// Largest metadata accepted in a record.
const MAX_META: usize = 1 << 20;

/// Names a log in errors.
pub(crate) fn log_what(path: &Path) -> String {
    format!("checkpoint log '{}'", path.display())
}

/// One checkpoint as a log record.
pub(crate) fn encode_record(cp: &Checkpoint) -> Result<Vec<u8>, StoreError> {
    let meta = codec::encode(&cp.meta()).map_err(|source| StoreError::Encode {
        what: format!("checkpoint {} of run '{}'", cp.id, cp.run_id),
        source,
    })?;
    let too_large = || {
        StoreError::corrupt(
            format!("checkpoint {} of run '{}'", cp.id, cp.run_id),
            "too large for one log record (4 GiB)",
        )
    };
    let meta_len = u32::try_from(meta.len()).map_err(|_| too_large())?;
    let body_len = 4 + meta.len() + cp.payload.len();
    let body_len32 = u32::try_from(body_len).map_err(|_| too_large())?;
    let mut out = Vec::with_capacity(RECORD_PREFIX + body_len);
    out.extend_from_slice(&body_len32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&meta_len.to_le_bytes());
    out.extend_from_slice(&meta);
    out.extend_from_slice(&cp.payload);
    let crc = crc32c::crc32c(&out[RECORD_PREFIX..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Appends `record` to the log at `path` (created with its magic bytes if
/// missing), flushed to the disk if `fsync`.
pub(crate) fn append(path: &Path, record: &[u8], fsync: bool) -> Result<(), StoreError> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| StoreError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
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
    Ok(())
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

/// A record found in a log: its metadata and where its payload is.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The record's metadata.
    pub(crate) meta: CheckpointMeta,
    payload: Range<usize>,
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
        Ok((Log::from_bytes(bytes, &log_what(path))?, version))
    }

    /// The log in `bytes`; `what` names it in errors.
    pub(crate) fn from_bytes(bytes: Vec<u8>, what: &str) -> Result<Log, StoreError> {
        let mut by_id = std::collections::BTreeMap::new();
        for located in locate(&bytes, what)? {
            by_id.insert(located.meta.id, located);
        }
        Ok(Log {
            bytes,
            records: by_id.into_values().collect(),
        })
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

/// Every checkpoint in the log's `bytes`, in the order appended (an id
/// saved twice appears twice). Payloads are verified by whoever loads them
/// ([`Checkpoint::verify`]).
#[cfg(test)]
pub(crate) fn scan(bytes: &[u8], what: &str) -> Result<Vec<Checkpoint>, StoreError> {
    Ok(locate(bytes, what)?
        .into_iter()
        .map(|r| Checkpoint::from_parts(r.meta, bytes[r.payload].to_vec()))
        .collect())
}

/// The records of a log's bytes, in the order appended; `what` names it
/// in errors.
fn locate(bytes: &[u8], what: &str) -> Result<Vec<Located>, StoreError> {
    if bytes.len() < LOG_MAGIC.len() {
        // A log whose first append was cut short holds nothing yet.
        return if LOG_MAGIC.starts_with(bytes) {
            Ok(Vec::new())
        } else {
            Err(StoreError::corrupt(
                what,
                "not a troupe checkpoint log (bad magic bytes)",
            ))
        };
    }
    if &bytes[..8] != LOG_MAGIC {
        return Err(StoreError::corrupt(
            what,
            "not a troupe checkpoint log (bad magic bytes)",
        ));
    }
    let mut out = Vec::new();
    let mut at = LOG_MAGIC.len();
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < RECORD_PREFIX {
            break; // a torn tail
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let Some(body) = rest.get(RECORD_PREFIX..RECORD_PREFIX + len) else {
            break; // a torn tail
        };
        let end = at + RECORD_PREFIX + len;
        if crc32c::crc32c(body) != crc {
            if end == bytes.len() {
                break; // the last record, torn
            }
            return Err(StoreError::corrupt(
                what,
                format!("the record at byte {at} fails its checksum"),
            ));
        }
        let (meta, payload) = decode_body(body).map_err(|reason| {
            StoreError::corrupt(what, format!("the record at byte {at}: {reason}"))
        })?;
        let start = at + RECORD_PREFIX + payload.start;
        out.push(Located {
            meta,
            payload: start..start + payload.len(),
        });
        at = end;
    }
    Ok(out)
}

/// A record body's metadata, and where its payload is in the body.
fn decode_body(body: &[u8]) -> Result<(CheckpointMeta, Range<usize>), String> {
    let Some((len, rest)) = body.split_first_chunk::<4>() else {
        return Err("shorter than its header".into());
    };
    let len = u32::from_le_bytes(*len) as usize;
    if len > MAX_META || len > rest.len() {
        return Err(format!("metadata length {len} is implausible"));
    }
    let meta: CheckpointMeta = codec::decode(&rest[..len]).map_err(|e| e.to_string())?;
    let payload_len = rest.len() - len;
    if payload_len as u64 != meta.payload_len {
        return Err(format!(
            "payload has {payload_len} bytes, its metadata says {}",
            meta.payload_len
        ));
    }
    Ok((meta, 4 + len..body.len()))
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

    fn log(cps: &[Checkpoint]) -> Vec<u8> {
        let mut bytes = LOG_MAGIC.to_vec();
        for cp in cps {
            bytes.extend_from_slice(&encode_record(cp).unwrap());
        }
        bytes
    }

    #[test]
    fn a_torn_tail_is_ignored_and_damage_before_it_is_not() {
        let a = Checkpoint::new("r", None, 1, 2, vec![1; 40]);
        let b = Checkpoint::new("r", Some(a.id), 2, 2, vec![2; 40]);
        let bytes = log(&[a.clone(), b.clone()]);
        assert_eq!(scan(&bytes, "log").unwrap(), vec![a.clone(), b.clone()]);
        let first_end = log(std::slice::from_ref(&a)).len();
        // Every cut inside the second record leaves the first.
        for cut in first_end..bytes.len() {
            assert_eq!(
                scan(&bytes[..cut], "log").unwrap(),
                vec![a.clone()],
                "cut {cut}"
            );
        }
        for cut in 0..8 {
            assert!(scan(&bytes[..cut], "log").unwrap().is_empty());
        }
        // A flipped byte in the last record is a torn tail; in the first, damage.
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(scan(&bad, "log").unwrap(), vec![a.clone()]);
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        let e = scan(&bad, "log").unwrap_err();
        assert!(e.is_corrupt() && e.to_string().contains("byte 8"), "{e}");
        let mut bad = bytes;
        bad[0] = b'X';
        assert!(scan(&bad, "log").unwrap_err().is_corrupt());
    }
}
