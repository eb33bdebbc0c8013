//! [`ResultCache`]: node results kept by key beside a store's runs (the
//! seed's per-node result cache: a node whose result is found under its
//! key is not run again).
//!
//! Every store keeps them: in memory ([`MemoryStore`](super::MemoryStore)),
//! as files `<root>/cache/<hex>.bin` ([`FileStore`](super::FileStore)), in
//! table `node_cache` of a SQLite database (made on the first write, so a
//! database written before it opens unchanged) and in table
//! `troupe_node_cache` of a PostgreSQL database (a migration). Keys are
//! opaque text; a caller hashes what it wants into them and keeps what it
//! needs to check a hit in the value.

use async_trait::async_trait;

use super::error::StoreError;

/// Results kept by key, shared by every run of a store (and every process
/// that opens it).
#[async_trait]
pub trait ResultCache: Send + Sync {
    /// The value kept under `key`; `None` when there is none.
    async fn cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Keeps `value` under `key`, replacing what was there.
    async fn save_cached(&self, key: &str, value: &[u8]) -> Result<(), StoreError>;
}

/// The FNV-1a 64-bit hash of `bytes`: stable across builds and processes
/// (unlike `std`'s hasher), for cache keys.
///
/// ```
/// use troupe_runtime::store::stable_hash;
///
/// assert_eq!(stable_hash(b""), 0xcbf2_9ce4_8422_2325);
/// assert_ne!(stable_hash(b"a"), stable_hash(b"b"));
/// ```
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FileStore, MemoryStore};

    async fn keeps_and_replaces(cache: &dyn ResultCache) {
        assert_eq!(cache.cached("k").await.unwrap(), None);
        cache.save_cached("k", b"one").await.unwrap();
        cache.save_cached("other", b"two").await.unwrap();
        assert_eq!(
            cache.cached("k").await.unwrap().as_deref(),
            Some(&b"one"[..])
        );
        cache.save_cached("k", b"three").await.unwrap();
        assert_eq!(
            cache.cached("k").await.unwrap().as_deref(),
            Some(&b"three"[..])
        );
    }

    #[tokio::test]
    async fn every_store_keeps_results_by_key() {
        keeps_and_replaces(&MemoryStore::new()).await;
        let dir = tempfile::tempdir().unwrap();
        keeps_and_replaces(&FileStore::open(dir.path().join("d")).unwrap()).await;
        #[cfg(feature = "sqlite")]
        {
            let path = dir.path().join("s.db");
            keeps_and_replaces(&crate::store::SqliteStore::open(&path).unwrap()).await;
            // Another opening of the database finds what the first kept.
            let again = crate::store::SqliteStore::open(&path).unwrap();
            assert_eq!(
                again.cached("k").await.unwrap().as_deref(),
                Some(&b"three"[..])
            );
        }
    }
}
