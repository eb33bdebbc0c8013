//! The hash map behind [`Router::targets`](crate::Router::targets).
//!
//! Sender names are chosen by the program, not by an adversary, so the
//! DoS resistance of the default SipHash buys nothing here, while its cost is
//! a large share of a lookup. This hashes a word at a time with a folded
//! multiply (as foldhash and ahash do): the full 128-bit product spreads every
//! input bit over the state, which rustc's cheaper Fx hash does not (it
//! collides on names like `agent-1234`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FoldHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FoldHasher>>;

/// A word-at-a-time folded-multiply hash, unseeded.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FoldHasher {
    hash: u64,
}

// An odd constant with well-spread bits (from the fractional part of pi).
const SEED: u64 = 0x243f_6a88_85a3_08d3;

impl FoldHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        let product = u128::from(self.hash ^ word) * u128::from(SEED);
        // Truncation is the point: fold the high half onto the low half.
        self.hash = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for FoldHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Mixing in the length keeps zero-padded tails ("a" and "a\0") apart.
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            for (w, b) in word.iter_mut().zip(rest) {
                *w = *b;
            }
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn distinguishes_similar_names() {
        let build = BuildHasherDefault::<FoldHasher>::default();
        let hashes: std::collections::HashSet<u64> = (0..100_000)
            .map(|i| build.hash_one(format!("agent-{i}")))
            .collect();
        assert_eq!(hashes.len(), 100_000);
        assert_ne!(build.hash_one("abcdefgh"), build.hash_one("abcdefgh\0"));
        assert_ne!(build.hash_one("a"), build.hash_one("a\0"));
    }

    #[test]
    fn map_lookups_by_str() {
        let mut map: FastMap<Box<str>, u8> = FastMap::default();
        map.insert("planner".into(), 1);
        assert_eq!(map.get("planner"), Some(&1));
        assert_eq!(map.get("plan"), None);
    }
}
