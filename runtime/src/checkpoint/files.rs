//! The stored byte layout of a checkpoint file (a thread record's is in
//! `thread_record.rs`).
//!
//! It starts with 8 magic bytes (so a stray file is told apart from a
//! damaged one, and the layout itself can change later), and carries a
//! checksum, because bincode happily decodes many damaged inputs into wrong
//! values instead of failing.
//!
//! ```text
//! checkpoint file: "TRPCKPT1" | header length: u32 LE | checksum(header): u64 LE | header: codec(CheckpointMeta) | payload
//! ```
//!
//! The checksum is FNV-1a ([`legacy_checksum`]): the layout did not change
//! with checkpoint format 5. `FileStore` writes checkpoints to a log since
//! format 5 (`store/log.rs`) and only reads checkpoint files.
//!
//! [`legacy_checksum`]: super::record::legacy_checksum

use super::record::{Checkpoint, CheckpointMeta, legacy_checksum as checksum};
use crate::checkpoint::codec;
use crate::store::StoreError;

/// Start of a checkpoint file.
pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"TRPCKPT1";
/// Bytes before a checkpoint file's header.
pub(crate) const CHECKPOINT_PREFIX: usize = 20;
/// Largest header accepted: metadata is small, so a bigger length means a
/// damaged file, and allocating it could exhaust memory.
pub(crate) const MAX_HEADER: usize = 1 << 20;

/// The header bytes of a checkpoint file (everything before the payload):
/// files of this layout are read, no longer written (tests write them).
#[cfg(test)]
pub(crate) fn checkpoint_header(cp: &Checkpoint) -> Result<Vec<u8>, StoreError> {
    let meta = codec::encode(&cp.meta()).map_err(|source| StoreError::Encode {
        what: format!("checkpoint {} of run '{}'", cp.id, cp.run_id),
        source,
    })?;
    let len = u32::try_from(meta.len())
        .ok()
        .filter(|&l| (l as usize) <= MAX_HEADER)
        .ok_or_else(|| {
            StoreError::corrupt(format!("checkpoint {}", cp.id), "metadata too large")
        })?;
    let mut out = Vec::with_capacity(CHECKPOINT_PREFIX + meta.len());
    out.extend_from_slice(CHECKPOINT_MAGIC);
    out.extend_from_slice(&len.to_le_bytes());
    // The payload's checksum is in the header; the header needs its own.
    out.extend_from_slice(&checksum(&meta).to_le_bytes());
    out.extend_from_slice(&meta);
    Ok(out)
}

/// The header's length and checksum, read from a checkpoint file's first
/// [`CHECKPOINT_PREFIX`] bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderInfo {
    /// Length of the header in bytes.
    pub(crate) len: usize,
    /// Its checksum.
    pub(crate) checksum: u64,
}

/// Reads the header's length and checksum from a checkpoint file's first
/// bytes; `what` names the file in errors.
pub(crate) fn checkpoint_header_info(prefix: &[u8], what: &str) -> Result<HeaderInfo, StoreError> {
    if prefix.len() < CHECKPOINT_PREFIX {
        return Err(StoreError::corrupt(
            what,
            format!(
                "truncated: {} bytes, shorter than the file header",
                prefix.len()
            ),
        ));
    }
    if &prefix[..8] != CHECKPOINT_MAGIC {
        return Err(StoreError::corrupt(
            what,
            "not a troupe checkpoint file (bad magic bytes)",
        ));
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&prefix[8..12]);
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HEADER {
        return Err(StoreError::corrupt(
            what,
            format!("header length {len} is implausible"),
        ));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&prefix[12..20]);
    Ok(HeaderInfo {
        len,
        checksum: u64::from_le_bytes(sum),
    })
}

/// Verifies and decodes a checkpoint file's header (the bytes after the
/// prefix).
pub(crate) fn decode_checkpoint_meta(
    header: &[u8],
    info: HeaderInfo,
    what: &str,
) -> Result<CheckpointMeta, StoreError> {
    let actual = checksum(header);
    if actual != info.checksum {
        return Err(StoreError::corrupt(
            what,
            format!(
                "header checksum is {actual:016x}, the file says {:016x}",
                info.checksum
            ),
        ));
    }
    codec::decode(header).map_err(|e| StoreError::corrupt(what, format!("bad header: {e}")))
}

/// Decodes a whole checkpoint file and verifies its payload.
pub(crate) fn decode_checkpoint_file(bytes: &[u8], what: &str) -> Result<Checkpoint, StoreError> {
    let info = checkpoint_header_info(bytes, what)?;
    let len = info.len;
    let rest = &bytes[CHECKPOINT_PREFIX..];
    if rest.len() < len {
        return Err(StoreError::corrupt(
            what,
            format!("truncated: header needs {len} bytes, {} left", rest.len()),
        ));
    }
    let meta = decode_checkpoint_meta(&rest[..len], info, what)?;
    let payload = &rest[len..];
    if payload.len() as u64 != meta.payload_len {
        return Err(StoreError::corrupt(
            what,
            format!(
                "truncated or padded: payload has {} bytes, the header says {}",
                payload.len(),
                meta.payload_len
            ),
        ));
    }
    let cp = Checkpoint::from_parts(meta, payload.to_vec());
    cp.verify()
        .map_err(|e| StoreError::corrupt(what, format!("{e}")))?;
    Ok(cp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_file_round_trips_and_damage_is_caught() {
        let cp = Checkpoint::new("r", None, 1, 2, b"payload bytes".to_vec());
        let mut file = checkpoint_header(&cp).unwrap();
        file.extend_from_slice(&cp.payload);
        assert_eq!(decode_checkpoint_file(&file, "f").unwrap(), cp);
        for cut in 0..file.len() {
            let e = decode_checkpoint_file(&file[..cut], "f").unwrap_err();
            assert!(e.is_corrupt(), "{e}");
        }
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x01;
            let e = decode_checkpoint_file(&bad, "f").unwrap_err();
            assert!(e.is_corrupt(), "byte {i}: {e}");
        }
    }
}
