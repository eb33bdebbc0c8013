//! `troupe runs prune FILE [--older-than D] [--dry-run]`: applies the
//! store's retention (`checkpoint: {retention: …}`; `--older-than` sets the
//! age of the finished runs deleted) and gives the space back.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use troupe::config::{Config, HumanDuration};
use troupe::history::{Retention, prune as apply};

use super::{FAILED, INVALID, emit, report, store};

/// `troupe runs prune`'s arguments.
#[derive(clap::Args)]
pub(crate) struct PruneArgs {
    /// The config file (its `checkpoint:` store).
    file: PathBuf,
    /// Deletes the finished runs (completed, stopped, cancelled) whose
    /// last checkpoint is older than this (`7d`, `12h`, `30m`); overrides
    /// `checkpoint.retention.runs`.
    #[arg(long, value_name = "DURATION")]
    older_than: Option<String>,
    /// Says what would be deleted, deletes nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `troupe runs prune`.
pub(crate) async fn prune(args: PruneArgs) -> u8 {
    let config = match Config::load(&args.file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let mut keep: Retention = config
        .spec()
        .checkpoint
        .as_ref()
        .and_then(|c| c.retention.as_ref())
        .map(|r| r.to_runtime())
        .unwrap_or_default();
    if let Some(text) = &args.older_than {
        match text.parse::<HumanDuration>() {
            Ok(d) => keep.runs = Some(d.duration),
            Err(e) => {
                eprintln!(
                    "troupe: --older-than takes a duration such as `7d`, `12h` or `30m` (got `{text}`: {e})"
                );
                return INVALID;
            }
        }
    }
    if keep.keeps_all() {
        eprintln!(
            "troupe: nothing to prune: give --older-than DURATION, or set `checkpoint: {{retention: {{runs: 7d, checkpoints: 10, sessions: 30d}}}}` in {}",
            args.file.display()
        );
        return INVALID;
    }
    let store = match store::open(&config, "`troupe runs prune`").await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let before = size(store.location.as_deref());
    let pruned = match apply(
        store.checkpoints.as_ref(),
        store.threads.as_ref(),
        &keep,
        SystemTime::now(),
        args.dry_run,
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("troupe: cannot prune the {}: {e}", store::describe(&store));
            return FAILED;
        }
    };
    let after = size(store.location.as_deref());
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    let mut out = format!(
        "{verb} {} finished run(s), {} older checkpoint(s), {} idle session(s) in the {}",
        pruned.runs.len(),
        pruned.checkpoints,
        pruned.sessions.len(),
        store::describe(&store)
    );
    if !args.dry_run
        && let (Some(b), Some(a)) = (before, after)
    {
        out.push_str(&format!("; {b} -> {a} bytes"));
    }
    out.push('\n');
    for id in &pruned.runs {
        out.push_str(&format!("run {id}\n"));
    }
    for id in &pruned.sessions {
        out.push_str(&format!("session {id}\n"));
    }
    emit(&out)
}

/// The bytes a store takes on disk: a SQLite file with its WAL, or the
/// files of a directory (one level of subdirectories down).
fn size(location: Option<&Path>) -> Option<u64> {
    let path = location?;
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        let wal = path.with_extension(
            path.extension()
                .map(|e| format!("{}-wal", e.to_string_lossy()))
                .unwrap_or_else(|| "wal".into()),
        );
        return Some(meta.len() + std::fs::metadata(wal).map_or(0, |m| m.len()));
    }
    let mut total = 0;
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        let Ok(m) = entry.metadata() else { continue };
        if m.is_dir() {
            for inner in std::fs::read_dir(entry.path()).ok()?.flatten() {
                total += inner.metadata().map_or(0, |m| m.len());
            }
        } else {
            total += m.len();
        }
    }
    Some(total)
}
