//! The config's checkpoint store as `runs`, `run --resume` and
//! `chat --list` use it: one that outlives the process, and the runs in it.

use std::path::Path;

use troupe::config::{Config, Store, StoreKind};
use troupe::{history::RunSummary, history::summarize_runs};

use super::{FAILED, INVALID, report, show};

/// How many known runs an unknown run id's error lists.
const SHOWN: usize = 5;

/// `sqlite store at runs.db`, `dir store at state/`.
pub(crate) fn describe(store: &Store) -> String {
    let kind = match store.kind {
        StoreKind::Memory => "memory",
        StoreKind::Dir => "dir",
        StoreKind::Sqlite => "sqlite",
        StoreKind::Postgres => "postgres",
    };
    match &store.database {
        Some(db) => format!("{kind} store at {db}"),
        None => format!("{kind} store at {}", show(store.location.as_deref())),
    }
}

/// Whether `store` keeps runs after the process ends.
pub(crate) fn outlives(store: Option<&Store>) -> bool {
    store.is_some_and(|s| s.kind != StoreKind::Memory)
}

/// Refuses a store that keeps nothing between processes (or none at all),
/// with a message saying what to add; `what` is what needed it.
pub(crate) fn durable<'a>(
    file: &Path,
    store: Option<&'a Store>,
    what: &str,
) -> Result<&'a Store, u8> {
    match store {
        Some(s) if s.kind != StoreKind::Memory => Ok(s),
        Some(_) => {
            eprintln!(
                "troupe: {what} needs a store that outlives the process: {} keeps its checkpoint store in memory; use `checkpoint: {{store: sqlite, path: runs.db}}` (or `store: dir`)",
                file.display()
            );
            Err(INVALID)
        }
        None => {
            eprintln!(
                "troupe: {what} needs a checkpoint store: {} has none; add `checkpoint: {{store: sqlite, path: runs.db}}` (or `store: dir`)",
                file.display()
            );
            Err(INVALID)
        }
    }
}

/// Opens the store `config` describes, without building its workflow
/// (no model client or MCP server is started); refuses none or memory. A
/// PostgreSQL store is connected to (within its connect timeout).
pub(crate) async fn open(config: &Config, what: &str) -> Result<Store, u8> {
    let Some(cp) = &config.spec().checkpoint else {
        return durable(config.path(), None, what).cloned();
    };
    let durability = cp.durability.map_or(Default::default(), |d| d.to_runtime());
    let save_errors = cp.on_error.map_or(Default::default(), |e| e.to_runtime());
    let store = if cp.store == StoreKind::Postgres {
        let url = config
            .checkpoint_url()
            .map_err(|e| report(&e))?
            .unwrap_or_default();
        Store::open_postgres(&url, durability, save_errors).await
    } else {
        let path = config.checkpoint_path().map_err(|e| report(&e))?;
        Store::open_with(cp.store, path, durability, save_errors)
    }
    .map_err(|e| report(&e))?;
    durable(config.path(), Some(&store), what)?;
    Ok(store)
}

/// The runs in `store`, newest first.
pub(crate) async fn runs(store: &Store) -> Result<Vec<RunSummary>, u8> {
    summarize_runs(store.checkpoints.as_ref())
        .await
        .map_err(|e| {
            eprintln!(
                "troupe: cannot list the runs in the {}: {e}",
                describe(store)
            );
            FAILED
        })
}

/// Finds run `wanted` (`latest`: the newest) in `store`; an unknown id is
/// an error naming the store and a few runs it knows.
pub(crate) async fn find(file: &Path, store: &Store, wanted: &str) -> Result<RunSummary, u8> {
    let all = runs(store).await?;
    let found = if wanted == "latest" {
        all.first().cloned()
    } else {
        all.iter().find(|r| r.run_id == wanted).cloned()
    };
    if let Some(run) = found {
        return Ok(run);
    }
    if all.is_empty() {
        eprintln!(
            "troupe: no run `{wanted}` to resume: the {} holds no runs",
            describe(store)
        );
    } else {
        let mut known: Vec<&str> = all.iter().take(SHOWN).map(|r| r.run_id.as_str()).collect();
        let more = all.len().saturating_sub(SHOWN);
        if more > 0 {
            known.push("…");
        }
        eprintln!(
            "troupe: no run `{wanted}` in the {}; known runs (newest first): {}{}; `troupe runs {}` lists them",
            describe(store),
            known.join(", "),
            if more > 0 {
                format!(" ({more} more)")
            } else {
                String::new()
            },
            file.display()
        );
    }
    Err(INVALID)
}
