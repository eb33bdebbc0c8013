//! A forked run's lineage as a file of the [`FileStore`](super::FileStore):
//! `<root>/lineage/<run id>.json`, written atomically. The directory is
//! made on the first fork, so a root written before forks existed opens
//! and lists as it did.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::store::StoreError;
use crate::store::atomic::write_atomic;
use crate::store::lineage::{Lineage, decode};

impl super::FileStore {
    /// The file keeping where run `run_id` was forked from.
    pub fn lineage_path(&self, run_id: &str) -> PathBuf {
        self.root().join("lineage").join(format!("{run_id}.json"))
    }
}

/// The lineage kept at `path`; `None` when there is no such file.
pub(super) fn read(path: &Path) -> Result<Option<Lineage>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => decode(&bytes, &format!("lineage file '{}'", path.display())).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io("read", path, e)),
    }
}

/// Writes `bytes` (an encoded lineage) to `path`, making its directory.
pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| StoreError::io("create", dir, e))?;
    }
    write_atomic(path, &[bytes])
}
