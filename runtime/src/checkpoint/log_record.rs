//! A run's checkpoint log as bytes (format 5 on): the magic, then one
//! record per checkpoint, each framed by its length and checksum.
//!
//! ```text
//! log:    "TRPLOG05" | record*
//! record: body length: u32 LE | crc32c(body): u32 LE | body
//! body:   meta length: u32 LE | codec(CheckpointMeta) | payload
//! ```
//!
//! Reading stops at the first record cut short ([`Damage::Torn`], a crash
//! while appending) or damaged ([`Damage::Bad`]); the file around it
//! (appending, cutting a torn tail, rewriting) is `store/log.rs`'s.

use std::ops::Range;

use super::codec;
use super::record::{Checkpoint, CheckpointMeta};
use crate::store::StoreError;

/// The first bytes of a log.
pub(crate) const LOG_MAGIC: &[u8; 8] = b"TRPLOG05";
/// Bytes before a record's body.
const RECORD_PREFIX: usize = 8;
/// Largest metadata accepted in a record.
const MAX_META: usize = 1 << 20;

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

/// What follows the last whole record of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Damage {
    /// The last record is cut short (or fails its checksum at the very
    /// end): a crash while it was appended.
    Torn,
    /// A record before the end is damaged (the reason, naming its offset):
    /// the records from there on cannot be read.
    Bad(String),
}

/// A record found in a log: its metadata and where its payload is.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The record's metadata.
    pub(crate) meta: CheckpointMeta,
    /// Where its payload is in the log's bytes.
    pub(crate) payload: Range<usize>,
}

/// Every checkpoint in the log's `bytes`, in the order appended (an id
/// saved twice appears twice), up to the first damage. Payloads are
/// verified by whoever loads them ([`Checkpoint::verify`]).
#[cfg(test)]
pub(crate) fn scan(bytes: &[u8]) -> (Vec<Checkpoint>, Option<Damage>) {
    let scan = locate(bytes);
    let cps = scan
        .records
        .into_iter()
        .map(|r| Checkpoint::from_parts(r.meta, bytes[r.payload].to_vec()))
        .collect();
    (cps, scan.damage)
}

/// The whole records of a log, where they end, and what follows them.
pub(crate) struct Scan {
    /// The whole records, in the order appended.
    pub(crate) records: Vec<Located>,
    /// Where the last whole record ends.
    pub(crate) good_end: usize,
    /// What follows it, if anything does.
    pub(crate) damage: Option<Damage>,
}

/// The records of a log's bytes, in the order appended, up to the first
/// one that is cut short or damaged.
pub(crate) fn locate(bytes: &[u8]) -> Scan {
    let stop = |records, good_end, damage| Scan {
        records,
        good_end,
        damage: Some(damage),
    };
    if bytes.len() < LOG_MAGIC.len() {
        // A log whose first append was cut short holds nothing yet.
        let damage = if LOG_MAGIC.starts_with(bytes) {
            Damage::Torn
        } else {
            Damage::Bad("not a troupe checkpoint log (bad magic bytes)".into())
        };
        return stop(Vec::new(), 0, damage);
    }
    if &bytes[..8] != LOG_MAGIC {
        return stop(
            Vec::new(),
            0,
            Damage::Bad("not a troupe checkpoint log (bad magic bytes)".into()),
        );
    }
    let mut out = Vec::new();
    let mut at = LOG_MAGIC.len();
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < RECORD_PREFIX {
            return stop(out, at, Damage::Torn);
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let Some(body) = rest.get(RECORD_PREFIX..RECORD_PREFIX + len) else {
            return stop(out, at, Damage::Torn);
        };
        let end = at + RECORD_PREFIX + len;
        if crc32c::crc32c(body) != crc {
            let damage = if end == bytes.len() {
                Damage::Torn // the last record, torn
            } else {
                Damage::Bad(format!("the record at byte {at} fails its checksum"))
            };
            return stop(out, at, damage);
        }
        let (meta, payload) = match decode_body(body) {
            Ok(found) => found,
            Err(reason) => {
                return stop(
                    out,
                    at,
                    Damage::Bad(format!("the record at byte {at}: {reason}")),
                );
            }
        };
        let start = at + RECORD_PREFIX + payload.start;
        out.push(Located {
            meta,
            payload: start..start + payload.len(),
        });
        at = end;
    }
    Scan {
        records: out,
        good_end: at,
        damage: None,
    }
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
