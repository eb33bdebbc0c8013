//! [`Store`]: the checkpoint store a config describes.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use troupe_runtime::store::{
    CheckpointStore, Durability, FileStore, MemoryStore, ResultCache, RunLeases, SaveErrors,
    SqliteStore, ThreadStore,
};

use crate::error::ConfigError;
use crate::load::Config;
use crate::schema::StoreKind;
use crate::tree::FieldPath;

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
    /// Where nodes with `cache:` keep their results.
    pub cache: Arc<dyn ResultCache>,
    /// Which kind of store this is (memory, directory or SQLite).
    pub kind: StoreKind,
    /// The directory or database file, for `dir` and `sqlite`.
    pub location: Option<PathBuf>,
    /// The database, for `postgres`: `postgres://user@host:port/dbname`
    /// (never the password).
    pub database: Option<String>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("kind", &self.kind)
            .field("location", &self.location)
            .field("database", &self.database)
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
        Self::open_with(kind, location, durability, SaveErrors::Fail)
    }

    /// [`Store::open_durable`], with `save_errors` saying what a run does
    /// when a checkpoint cannot be saved (see [`SaveErrors`]).
    pub fn open_with(
        kind: StoreKind,
        location: Option<PathBuf>,
        durability: Durability,
        save_errors: SaveErrors,
    ) -> Result<Store, ConfigError> {
        let fail = |e: &dyn fmt::Display| ConfigError::Build(format!("checkpoint store: {e}"));
        type Parts = (
            Arc<dyn CheckpointStore>,
            Arc<dyn ThreadStore>,
            Arc<dyn RunLeases>,
            Arc<dyn ResultCache>,
        );
        fn both<S: CheckpointStore + ThreadStore + RunLeases + ResultCache + 'static>(
            s: S,
        ) -> Parts {
            let s = Arc::new(s);
            (s.clone(), s.clone(), s.clone(), s)
        }
        let (checkpoints, threads, leases, cache) = match (kind, &location) {
            (StoreKind::Memory, _) => both(MemoryStore::new().with_durability(durability)),
            (StoreKind::Dir, Some(dir)) => both(
                FileStore::open(dir)
                    .map_err(|e| fail(&e))?
                    .with_durability(durability)
                    .with_save_errors(save_errors),
            ),
            (StoreKind::Sqlite, Some(file)) => {
                if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
                }
                both(
                    SqliteStore::open(file)
                        .and_then(|s| s.with_durability(durability))
                        .map(|s| s.with_save_errors(save_errors))
                        .map_err(|e| fail(&e))?,
                )
            }
            (StoreKind::Postgres, _) => {
                return Err(fail(
                    &"a `postgres` store is opened with `Store::open_postgres` (it connects)",
                ));
            }
            (_, None) => return Err(fail(&"a `dir` or `sqlite` store needs a path")),
        };
        Ok(Store {
            checkpoints,
            threads,
            leases,
            cache,
            kind,
            location,
            database: None,
        })
    }

    /// Connects to the PostgreSQL database at `url` and applies the
    /// migrations it lacks (see `PostgresStore`). Fails within the
    /// connect timeout naming what is wrong (bad URL, unreachable server,
    /// authentication, no such database, permission), never printing the
    /// password. Needs the `postgres` feature (on by default).
    pub async fn open_postgres(
        url: &str,
        durability: Durability,
        save_errors: SaveErrors,
    ) -> Result<Store, ConfigError> {
        #[cfg(feature = "postgres")]
        {
            let store = troupe_runtime::store::PostgresStore::connect(url)
                .await
                .map_err(|e| ConfigError::Build(format!("checkpoint store: {e}")))?
                .with_durability(durability)
                .with_save_errors(save_errors);
            let database = Some(store.db().to_string());
            let s = Arc::new(store);
            Ok(Store {
                checkpoints: s.clone(),
                threads: s.clone(),
                leases: s.clone(),
                cache: s,
                kind: StoreKind::Postgres,
                location: None,
                database,
            })
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = (url, durability, save_errors);
            Err(ConfigError::Build(
                "checkpoint store: this troupe was built without the `postgres` feature".into(),
            ))
        }
    }
}

impl Config {
    /// `checkpoint.url` with `${VAR}` (and `${VAR:-default}`) expanded;
    /// `None` without one. An unset variable, or a url empty once
    /// expanded, is an error placed at `checkpoint.url` (the value is
    /// never repeated: it may hold a password).
    pub fn checkpoint_url(&self) -> Result<Option<String>, ConfigError> {
        let Some(written) = self
            .spec()
            .checkpoint
            .as_ref()
            .and_then(|c| c.url.as_deref())
        else {
            return Ok(None);
        };
        let field = FieldPath::root().key("checkpoint").key("url");
        let invalid = |message: String| {
            ConfigError::Invalid(vec![
                self.locate(&field, message)
                    .expected("postgres://user:password@host:5432/dbname, or ${DATABASE_URL}"),
            ])
        };
        let expanded = crate::env::expand(written, &|k| std::env::var(k).ok())
            .map_err(|e| invalid(format!("checkpoint store url: {e}")))?;
        if expanded.trim().is_empty() {
            return Err(invalid(
                "checkpoint store url is empty once expanded".to_string(),
            ));
        }
        Ok(Some(expanded))
    }

    /// `checkpoint.path` with `${VAR}` (and `${VAR:-default}`) expanded,
    /// resolved against the config file's directory; `None` without one.
    /// An unset variable, or a path empty once expanded, is an error
    /// placed at `checkpoint.path`.
    pub fn checkpoint_path(&self) -> Result<Option<PathBuf>, ConfigError> {
        let Some(written) = self
            .spec()
            .checkpoint
            .as_ref()
            .and_then(|c| c.path.as_deref())
        else {
            return Ok(None);
        };
        let field = FieldPath::root().key("checkpoint").key("path");
        let invalid = |message: String| {
            ConfigError::Invalid(vec![
                self.locate(&field, message)
                    .expected("a directory (`dir`) or database file (`sqlite`)"),
            ])
        };
        let expanded = crate::env::expand(written, &|k| std::env::var(k).ok())
            .map_err(|e| invalid(format!("checkpoint store path: {e}")))?;
        if expanded.trim().is_empty() {
            return Err(invalid(format!(
                "checkpoint store path `{written}` is empty once expanded: SQLite would keep checkpoints in a temporary database, thrown away at exit"
            )));
        }
        Ok(Some(self.resolve_path(&expanded)))
    }
}
