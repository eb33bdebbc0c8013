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
use std::io::{ErrorKind, Write};
use std::path::Path;

use super::checkpoint::{Checkpoint, CheckpointMeta};
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

/// Every checkpoint in the log at `path`, in the order appended (an id
/// saved twice appears twice); none if there is no log. Payloads are
/// verified by whoever loads them ([`Checkpoint::verify`]).
pub(crate) fn read(path: &Path) -> Result<Vec<Checkpoint>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("read", path, e)),
    };
    scan(&bytes, &log_what(path))
}

/// The records of a log's bytes; `what` names it in errors.
pub(crate) fn scan(bytes: &[u8], what: &str) -> Result<Vec<Checkpoint>, StoreError> {
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
        out.push(decode_body(body).map_err(|reason| {
            StoreError::corrupt(what, format!("the record at byte {at}: {reason}"))
        })?);
        at = end;
    }
    Ok(out)
}

fn decode_body(body: &[u8]) -> Result<Checkpoint, String> {
    let Some((len, rest)) = body.split_first_chunk::<4>() else {
        return Err("shorter than its header".into());
    };
    let len = u32::from_le_bytes(*len) as usize;
    if len > MAX_META || len > rest.len() {
        return Err(format!("metadata length {len} is implausible"));
    }
    let meta: CheckpointMeta = codec::decode(&rest[..len]).map_err(|e| e.to_string())?;
    let payload = rest[len..].to_vec();
    if payload.len() as u64 != meta.payload_len {
        return Err(format!(
            "payload has {} bytes, its metadata says {}",
            payload.len(),
            meta.payload_len
        ));
    }
    Ok(Checkpoint::from_parts(meta, payload))
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

/// Keeps, of checkpoints read from a log, the last record of each id,
/// sorted by id.
pub(crate) fn latest_records(records: Vec<Checkpoint>) -> Vec<Checkpoint> {
    let mut by_id = std::collections::BTreeMap::new();
    for cp in records {
        by_id.insert(cp.id, cp);
    }
    by_id.into_values().collect()
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
