//! [`ResultCache`] for a [`FileStore`]: one file per key,
//! `<root>/cache/<hex of the key's hash>.bin`, written atomically; the
//! file starts with the key's length and the key, so two keys with one
//! hash are told apart (the other reads as absent).

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

use async_trait::async_trait;

use super::atomic::write_atomic;
use super::error::StoreError;
use super::file::FileStore;
use super::result_cache::{ResultCache, stable_hash};

impl FileStore {
    /// The file keeping the cached result under `key`.
    pub fn cache_path(&self, key: &str) -> PathBuf {
        self.root()
            .join("cache")
            .join(format!("{:016x}.bin", stable_hash(key.as_bytes())))
    }
}

#[async_trait]
impl ResultCache for FileStore {
    async fn cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let (path, key) = (self.cache_path(key), key.to_string());
        tokio::task::spawn_blocking(move || {
            let bytes = match fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(StoreError::io("read", &path, e)),
            };
            let Some((len, rest)) = bytes.split_first_chunk::<8>() else {
                return Ok(None);
            };
            let len = usize::try_from(u64::from_le_bytes(*len)).unwrap_or(usize::MAX);
            Ok(match rest.split_at_checked(len) {
                Some((k, value)) if k == key.as_bytes() => Some(value.to_vec()),
                _ => None,
            })
        })
        .await?
    }

    async fn save_cached(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let path = self.cache_path(key);
        let (key, value) = (key.as_bytes().to_vec(), value.to_vec());
        tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(|e| StoreError::io("create", dir, e))?;
            }
            let len = (key.len() as u64).to_le_bytes();
            write_atomic(&path, &[&len, &key, &value])
        })
        .await?
    }
}
