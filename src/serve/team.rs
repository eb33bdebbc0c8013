//! The teams a server serves, loaded from a config file or a directory of
//! them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use troupe::agents::model::Cassette;
use troupe::config::{BuildOptions, Built, Config, Store, StoreKind};

use super::{FAILED, INVALID};

/// One served config, built.
pub(crate) struct Team {
    /// Its name (the config's `name`, else the file's stem).
    pub(crate) name: String,
    /// The config, for its description.
    pub(crate) config: Config,
    /// The workflow and its store.
    pub(crate) built: Built,
    /// Where conversations are kept: the config's store, else memory
    /// (a session's turns run one at a time: double texting, `texting.rs`).
    pub(crate) store: Store,
    /// What the workers on its PostgreSQL store share (`board/`); none on
    /// a store one process owns.
    pub(crate) board: Option<std::sync::Arc<super::board::handle::Board>>,
}

/// Why the teams could not be loaded, and the exit code it makes.
pub(crate) struct LoadError {
    /// What to print.
    pub(crate) message: String,
    /// The exit code.
    pub(crate) code: u8,
}

impl LoadError {
    fn config(e: &troupe::config::ConfigError) -> Self {
        let code = match e {
            troupe::config::ConfigError::Build(_) => FAILED,
            _ => INVALID,
        };
        LoadError {
            message: e.to_string(),
            code,
        }
    }
}

/// The teams of `path`: one config file, or every `*.yaml`/`*.yml` in a
/// directory, by name.
pub(crate) async fn load_all(
    path: &Path,
    offline: bool,
    cassette: Option<&Arc<Cassette>>,
) -> Result<BTreeMap<String, Team>, LoadError> {
    let files = if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|e| LoadError {
            message: format!(
                "troupe serve: cannot read directory {}: {e}",
                path.display()
            ),
            code: INVALID,
        })?;
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(LoadError {
                message: format!(
                    "troupe serve: no config (*.yaml, *.yml) in directory {}",
                    path.display()
                ),
                code: INVALID,
            });
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut teams = BTreeMap::new();
    for file in files {
        let team = load(&file, offline, cassette).await?;
        if teams.contains_key(&team.name) {
            return Err(LoadError {
                message: format!(
                    "troupe serve: two configs are named `{}` ({} is the second); give each its own `name:`",
                    team.name,
                    file.display()
                ),
                code: INVALID,
            });
        }
        teams.insert(team.name.clone(), team);
    }
    Ok(teams)
}

/// The team of `file`; through `cassette` (`serve --record`, `--replay`)
/// when there is one.
async fn load(
    file: &Path,
    offline: bool,
    cassette: Option<&Arc<Cassette>>,
) -> Result<Team, LoadError> {
    let config = Config::load(file).map_err(|e| LoadError::config(&e))?;
    let options = BuildOptions {
        offline,
        troupe_exe: std::env::current_exe().ok(),
        cassette: cassette.cloned(),
        ..BuildOptions::default()
    };
    let built = config
        .build(&options)
        .await
        .map_err(|e| LoadError::config(&e))?;
    // What `troupe validate` would warn of, said once as the team loads.
    for w in &built.warnings {
        eprintln!("{}", w.warning_line());
    }
    let store = match &built.store {
        Some(s) => s.clone(),
        None => Store::open(StoreKind::Memory, None).map_err(|e| LoadError::config(&e))?,
    };
    let board = match (store.kind, config.checkpoint_url()) {
        (StoreKind::Postgres, Ok(Some(url))) => Some(
            super::board::handle::Board::open(&url)
                .await
                .map_err(|e| LoadError {
                    message: format!("troupe serve: {}: the runs board: {e}", file.display()),
                    code: FAILED,
                })?,
        ),
        _ => None,
    };
    let name = config.spec().name.clone().unwrap_or_else(|| {
        file.file_stem()
            .map_or_else(|| "team".into(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Team {
        name,
        config,
        built,
        store,
        board,
    })
}
