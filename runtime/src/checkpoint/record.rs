//! [`Checkpoint`]: one saved state of a run, its [`CheckpointId`] and the
//! [`CheckpointMeta`] listed without the payload.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::checkpoint::codec;
use crate::store::StoreError;

/// A checkpoint's identity, ordered by creation.
///
/// The high 64 bits are the creation time in nanoseconds since the Unix
/// epoch, made strictly increasing within a process so that two ids made
/// in the same nanosecond still sort in the order they were made; the low
/// 64 bits are a per-process random value, so ids made by two processes
/// (two nodes of a cluster, or a resumed run) do not collide.
///
/// Displayed (and parsed) as 32 lowercase hex digits, so the text form
/// sorts like the number: file names and SQL `ORDER BY` keep creation order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckpointId(pub u128);

impl CheckpointId {
    /// A fresh id, greater than every id made before it in this process.
    pub fn new() -> Self {
        static LAST: AtomicU64 = AtomicU64::new(0);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            // A clock before 1970 only loses the time ordering across
            // processes; the counter below still orders this process's ids.
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        // If the clock stands still or steps back, keep counting up from the
        // last id instead, so ids never repeat or go backwards here.
        let mut last = LAST.load(Ordering::Relaxed);
        let time = loop {
            let next = now.max(last.saturating_add(1));
            match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break next,
                Err(seen) => last = seen,
            }
        };
        CheckpointId(((time as u128) << 64) | process_salt() as u128)
    }

    /// The creation time encoded in the id (nanoseconds since the epoch).
    pub fn timestamp_nanos(&self) -> u64 {
        (self.0 >> 64) as u64
    }
}

impl Default for CheckpointId {
    fn default() -> Self {
        Self::new()
    }
}

/// A per-process random value, so two processes' ids differ.
fn process_salt() -> u64 {
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SALT.get_or_init(|| fastrand::u64(..))
}

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `{:032x}` by hand: ids are formatted for every SQLite row and
        // file name, and the formatter's padding path costs more than this.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (i, digit) in out.iter_mut().enumerate() {
            *digit = HEX[((self.0 >> (4 * (31 - i))) & 0xf) as usize];
        }
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CheckpointId({self})")
    }
}

impl FromStr for CheckpointId {
    type Err = StoreError;

    /// Parses the 32-hex-digit form written by `Display`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| StoreError::InvalidId {
            kind: "checkpoint id",
            id: s.escape_debug().to_string(),
            reason,
        };
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("expected 32 hex digits"));
        }
        u128::from_str_radix(s, 16)
            .map(CheckpointId)
            .map_err(|_| invalid("expected 32 hex digits"))
    }
}

// Text formats (JSON) carry the hex form: a 128-bit number does not survive
// most JSON readers. Binary formats carry the number.
impl Serialize for CheckpointId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(self)
        } else {
            s.serialize_u128(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for CheckpointId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let s = String::deserialize(d)?;
            s.parse().map_err(serde::de::Error::custom)
        } else {
            u128::deserialize(d).map(CheckpointId)
        }
    }
}

/// The checksum of a checkpoint payload from format 5 on: CRC-32C (the
/// `crc32c` crate, hardware-accelerated on x86-64 and aarch64), widened to
/// 64 bits.
///
/// Part of the stored format. CRC-32C detects every burst of up to 32
/// flipped bits, which is the damage a flipped bit or a torn write leaves;
/// it is not a defence against tampering.
pub fn checksum(bytes: &[u8]) -> u64 {
    u64::from(crc32c::crc32c(bytes))
}

/// The checksum of formats 4 and before (and of file headers and thread
/// records): 64-bit FNV-1a. Kept so that what they wrote still loads.
pub fn legacy_checksum(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ b as u64).wrapping_mul(PRIME))
}

/// The checksum a checkpoint of format `version` carries.
pub(crate) fn checksum_for(version: u32, bytes: &[u8]) -> u64 {
    if version >= FIRST_CHAINED_VERSION {
        checksum(bytes)
    } else {
        legacy_checksum(bytes)
    }
}

/// The first format whose payloads start with a [`CheckpointKind`] tag
/// and are checksummed with [`checksum`] (CRC-32C).
pub const FIRST_CHAINED_VERSION: u32 = 5;

/// What a checkpoint's payload holds: the whole state, or what changed
/// since its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    /// The whole state (every checkpoint of format 4 and before).
    Full,
    /// What changed since [`Checkpoint::parent`]: loading it needs the
    /// chain back to a full one (see [`crate::store::CheckpointStore::chain`]).
    Delta,
}

/// The first payload byte of a delta checkpoint (format 5 on).
pub(crate) const DELTA_TAG: u8 = b'D';
/// The first payload byte of a full checkpoint written by the engine
/// (format 5 on).
pub(crate) const FULL_TAG: u8 = b'F';

/// One saved state of a run.
///
/// The payload is opaque to the store: the engine encodes the run's state
/// (threads, inboxes, frontier, counters) with [`crate::codec`] and decodes
/// it on resume, refusing a checkpoint whose `topology_hash` or
/// `format_version` does not match. The store keeps the record as given
/// and checks it when it comes back: every store's `load` and `latest` run
/// [`Checkpoint::verify`], which recomputes the checksum.
///
/// ```
/// use troupe_runtime::store::Checkpoint;
///
/// let mut cp = Checkpoint::new("run-1", None, 3, 0xfeed, vec![1, 2, 3]);
/// assert!(cp.verify().is_ok());
/// cp.payload[0] ^= 0xff;
/// assert!(cp.verify().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The checkpoint's id (orders checkpoints by creation).
    pub id: CheckpointId,
    /// The run it belongs to.
    pub run_id: String,
    /// The checkpoint this one follows, if any.
    pub parent: Option<CheckpointId>,
    /// When it was made.
    pub created_at: SystemTime,
    /// The superstep after which it was taken.
    pub superstep: u64,
    /// Hash of the workflow's topology: resuming refuses another topology.
    pub topology_hash: u64,
    /// [`codec::FORMAT_VERSION`] of the payload's encoding.
    pub format_version: u32,
    /// Checksum of the payload: [`checksum`] from format 5 on,
    /// [`legacy_checksum`] before.
    pub checksum: u64,
    /// The encoded run state.
    pub payload: Vec<u8>,
}

impl Checkpoint {
    /// A new checkpoint with a fresh id, the current time, the current
    /// [`codec::FORMAT_VERSION`] and the payload's checksum.
    pub fn new(
        run_id: impl Into<String>,
        parent: Option<CheckpointId>,
        superstep: u64,
        topology_hash: u64,
        payload: Vec<u8>,
    ) -> Self {
        Checkpoint {
            id: CheckpointId::new(),
            run_id: run_id.into(),
            parent,
            created_at: SystemTime::now(),
            superstep,
            topology_hash,
            format_version: codec::FORMAT_VERSION,
            checksum: checksum(&payload),
            payload,
        }
    }

    /// Whether the payload is the whole state or a delta against
    /// [`Checkpoint::parent`]: from format 5 on, a payload starting with
    /// the delta tag `b'D'` is a delta; anything else is whole.
    pub fn kind(&self) -> CheckpointKind {
        if self.format_version >= FIRST_CHAINED_VERSION
            && self.parent.is_some()
            && self.payload.first() == Some(&DELTA_TAG)
        {
            CheckpointKind::Delta
        } else {
            CheckpointKind::Full
        }
    }

    /// Everything but the payload.
    pub fn meta(&self) -> CheckpointMeta {
        CheckpointMeta {
            id: self.id,
            run_id: self.run_id.clone(),
            parent: self.parent,
            created_at: self.created_at,
            superstep: self.superstep,
            topology_hash: self.topology_hash,
            format_version: self.format_version,
            checksum: self.checksum,
            payload_len: self.payload.len() as u64,
        }
    }

    /// Puts metadata and a payload back together (as stores do on load).
    pub fn from_parts(meta: CheckpointMeta, payload: Vec<u8>) -> Self {
        Checkpoint {
            id: meta.id,
            run_id: meta.run_id,
            parent: meta.parent,
            created_at: meta.created_at,
            superstep: meta.superstep,
            topology_hash: meta.topology_hash,
            format_version: meta.format_version,
            checksum: meta.checksum,
            payload,
        }
    }

    /// Recomputes the payload's checksum; a mismatch is a
    /// [`StoreError::Corrupt`] naming the run and checkpoint.
    pub fn verify(&self) -> Result<(), StoreError> {
        let actual = checksum_for(self.format_version, &self.payload);
        if actual == self.checksum {
            Ok(())
        } else {
            Err(StoreError::corrupt(
                format!("checkpoint {} of run '{}'", self.id, self.run_id),
                format!(
                    "payload checksum is {actual:016x}, the record says {:016x}",
                    self.checksum
                ),
            ))
        }
    }
}

/// A checkpoint without its payload, for listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// The checkpoint's id.
    pub id: CheckpointId,
    /// The run it belongs to.
    pub run_id: String,
    /// The checkpoint this one follows, if any.
    pub parent: Option<CheckpointId>,
    /// When it was made.
    pub created_at: SystemTime,
    /// The superstep after which it was taken.
    pub superstep: u64,
    /// Hash of the workflow's topology.
    pub topology_hash: u64,
    /// Encoding version of the payload.
    pub format_version: u32,
    /// Checksum of the payload.
    pub checksum: u64,
    /// Size of the payload in bytes.
    pub payload_len: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_round_trip_as_text() {
        let ids: Vec<_> = (0..1000).map(|_| CheckpointId::new()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let texts: Vec<_> = ids.iter().map(|i| i.to_string()).collect();
        assert!(texts.windows(2).all(|w| w[0] < w[1]));
        for (id, text) in ids.iter().zip(&texts) {
            assert_eq!(text.parse::<CheckpointId>().unwrap(), *id);
        }
        for n in [0, 1, 0xabc, u128::MAX, 1 << 127, (7 << 64) | 42] {
            assert_eq!(CheckpointId(n).to_string(), format!("{n:032x}"));
        }
        assert!("xyz".parse::<CheckpointId>().is_err());
        assert!("g".repeat(32).parse::<CheckpointId>().is_err());
    }

    #[test]
    fn id_serializes_as_hex_in_json_and_number_in_bincode() {
        let id = CheckpointId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<CheckpointId>(&json).unwrap(), id);
        let bin: CheckpointId = codec::decode(&codec::encode(&id).unwrap()).unwrap();
        assert_eq!(bin, id);
    }

    #[test]
    fn checksum_known_values() {
        assert_eq!(legacy_checksum(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(legacy_checksum(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(legacy_checksum(b"foobar"), 0x8594_4171_f739_67e8);
        // CRC-32C's check value.
        assert_eq!(checksum(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn a_checkpoint_of_format_4_verifies_with_its_own_checksum() {
        let mut cp = Checkpoint::new("r", None, 1, 2, b"old".to_vec());
        cp.format_version = 4;
        assert!(cp.verify().is_err());
        cp.checksum = legacy_checksum(&cp.payload);
        assert!(cp.verify().is_ok());
        assert_eq!(cp.kind(), CheckpointKind::Full);
    }

    #[test]
    fn checkpoint_round_trips_through_the_codec() {
        let cp = Checkpoint::new("r", Some(CheckpointId::new()), 2, 7, vec![9; 100]);
        let back: Checkpoint = codec::decode(&codec::encode(&cp).unwrap()).unwrap();
        assert_eq!(back, cp);
        let meta: CheckpointMeta = codec::decode(&codec::encode(&cp.meta()).unwrap()).unwrap();
        assert_eq!(meta, cp.meta());
        assert_eq!(Checkpoint::from_parts(meta, cp.payload.clone()), cp);
    }
}
