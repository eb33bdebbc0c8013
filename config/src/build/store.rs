//! [`Store`]: the checkpoint store a config describes.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use troupe_runtime::store::{
    CheckpointStore, Durability, FileStore, MemoryStore, RunLeases, SqliteStore, ThreadStore,
};

use crate::error::ConfigError;
use crate::schema::StoreKind;

/// The checkpoint store, as both the engine's checkpoint store and the
/// chat sessions' thread store.
#[derive(Clone)]
pub struct Store {
    /// Where runs checkpoint.
    pub checkpoints: Arc<dyn CheckpointStore>,
    /// Where chat conversations are kept.
    pub threads: Arc<dyn ThreadStore>,
    /// Who runs which run: the lease a process takes before it runs one.
    pub leases: Arc<dyn RunLeases>,
    /// Which kind of store this is (memory, directory or SQLite).
    pub kind: StoreKind,
    /// The directory or database file, for `dir` and `sqlite`.
    pub location: Option<PathBuf>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("kind", &self.kind)
            .field("location", &self.location)
            .finish()
    }
}

impl Store {
    /// Opens the store a config describes (creating its directory).
    ///
    /// ```
    /// use troupe_config::{Store, StoreKind};
    ///
    /// let store = Store::open(StoreKind::Memory, None)?;
    /// assert_eq!(store.kind, StoreKind::Memory);
    /// assert!(Store::open(StoreKind::Sqlite, None).is_err()); // a file store needs a path
    /// # Ok::<(), troupe_config::ConfigError>(())
    /// ```
    pub fn open(kind: StoreKind, location: Option<PathBuf>) -> Result<Store, ConfigError> {
        Self::open_durable(kind, location, Durability::Process)
    }

    /// Opens the store a config describes with durability `durability`
    /// (see [`Durability`]; `fsync` flushes each checkpoint of a `dir` or
    /// `sqlite` store to the disk, `exit` checkpoints runs only when they
    /// stop).
    pub fn open_durable(
        kind: StoreKind,
        location: Option<PathBuf>,
        durability: Durability,
    ) -> Result<Store, ConfigError> {
        let fail = |e: &dyn fmt::Display| ConfigError::Build(format!("checkpoint store: {e}"));
        type Parts = (
            Arc<dyn CheckpointStore>,
            Arc<dyn ThreadStore>,
            Arc<dyn RunLeases>,
        );
        fn both<S: CheckpointStore + ThreadStore + RunLeases + 'static>(s: S) -> Parts {
            let s = Arc::new(s);
            (s.clone(), s.clone(), s)
        }
        let (checkpoints, threads, leases) = match (kind, &location) {
            (StoreKind::Memory, _) => both(MemoryStore::new().with_durability(durability)),
            (StoreKind::Dir, Some(dir)) => both(
                FileStore::open(dir)
                    .map_err(|e| fail(&e))?
                    .with_durability(durability),
            ),
            (StoreKind::Sqlite, Some(file)) => {
                if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
                }
                both(
                    SqliteStore::open(file)
                        .and_then(|s| s.with_durability(durability))
                        .map_err(|e| fail(&e))?,
                )
            }
            (_, None) => return Err(fail(&"a `dir` or `sqlite` store needs a path")),
        };
        Ok(Store {
            checkpoints,
            threads,
            leases,
            kind,
            location,
        })
    }
}
