//! The `ckpt` workload: what a checkpoint after every superstep costs.
//!
//! The 10-agent ring of `ring.rs`, N supersteps (N agent messages of ~35
//! characters after the task), run alternately without a store and with a
//! fresh store of one kind, `--reps` times. Reported, as the peers'
//! `ckpt/langgraph_ckpt.py` and `ckpt/maf_ckpt.py` report it:
//!
//! - `overhead_per_superstep_us`: the median over the repetitions of
//!   (run with checkpoints − run without) / N;
//! - `bytes_written`: for `file` and `sqlite` the bytes the process handed
//!   to `write()` during the run (`wchar` of /proc/self/io, all threads),
//!   for `memory` the payload bytes the engine saved (a counting wrapper
//!   around the store); `store_disk_bytes`: the store's files after the run
//!   (the SQLite database plus its WAL);
//! - `last_checkpoint_bytes`: the payload of the run's latest checkpoint;
//! - `thread_encoded_bytes`: the final thread encoded once with the
//!   runtime's codec, and `written_per_thread`: bytes written over that;
//! - `payload_bytes`: the checkpoints' payloads handed to the store, for
//!   every store (for `file` and `sqlite` the sum of the payload lengths
//!   the store lists after the run, which keeps them all), and
//!   `payload_per_thread`: those over the final thread — what a store is
//!   given, before its own layout (SQLite's WAL frames are whole pages);
//! - `load_last_ms`: resuming the finished run from its latest checkpoint
//!   (`Workflow::run_from_checkpoint`: `latest`, decode, set up, stop at
//!   once), median of 5; `latest_ms` the store's `latest` alone.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe::store::{
    Checkpoint, CheckpointId, CheckpointMeta, CheckpointStore, Durability, StoreError,
};
use troupe::{RunContext, RunResult, async_trait, codec};

use super::ring::{open_store, ring};
use super::{BoxError, median, round1, us};

/// The run id every measured run saves under.
const RUN: &str = "bench";

/// What to measure: a store kind at a durability, N supersteps.
pub(super) struct Ckpt<'a> {
    /// Supersteps (agent messages) per run.
    pub n: u64,
    /// `memory`, `file` or `sqlite`.
    pub store: &'a str,
    /// `process` (the default) or `fsync`.
    pub durability: &'a str,
    /// Runs with and without a store, alternately.
    pub reps: usize,
}

/// A store that counts the payload bytes saved into the store it wraps.
struct Counted {
    inner: Arc<dyn CheckpointStore>,
    bytes: AtomicU64,
}

#[async_trait]
impl CheckpointStore for Counted {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        self.bytes
            .fetch_add(checkpoint.payload.len() as u64, Ordering::Relaxed);
        self.inner.save(checkpoint).await
    }
    async fn load(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        self.inner.load(run_id, id).await
    }
    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        self.inner.latest(run_id).await
    }
    async fn list(&self, run_id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.inner.list(run_id).await
    }
    async fn delete(&self, run_id: &str, id: &CheckpointId) -> Result<bool, StoreError> {
        self.inner.delete(run_id, id).await
    }
    async fn prune(&self, run_id: &str, keep_last: usize) -> Result<usize, StoreError> {
        self.inner.prune(run_id, keep_last).await
    }
    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.runs().await
    }
    async fn chain(&self, run_id: &str, id: &CheckpointId) -> Result<Vec<Checkpoint>, StoreError> {
        self.inner.chain(run_id, id).await
    }
    fn durability(&self) -> Durability {
        self.inner.durability()
    }
}

/// A store of `kind` in `dir` at `durability` (`postgres`: the database
/// at `$TROUPE_PG_URL` or in `target/pg/url`, the run's checkpoints
/// deleted first).
async fn store(
    kind: &str,
    durability: &str,
    dir: &Path,
) -> Result<Arc<dyn CheckpointStore>, BoxError> {
    let durability = match durability {
        "process" => Durability::Process,
        "fsync" => Durability::Fsync,
        "exit" => Durability::Exit,
        other => return Err(format!("--durability {other}: process, fsync or exit").into()),
    };
    #[cfg(feature = "postgres")]
    if kind == "postgres" {
        let url = std::env::var("TROUPE_PG_URL")
            .or_else(|_| std::fs::read_to_string("target/pg/url"))
            .map_err(|_| "--store postgres: set TROUPE_PG_URL (or run .ci/start-postgres.sh)")?;
        let pg = troupe::store::PostgresStore::connect(url.trim())
            .await?
            .with_durability(durability);
        pg.prune(RUN, 0).await?;
        return Ok(Arc::new(pg));
    }
    open_store(kind, dir, durability)
}

/// Bytes this process has handed to `write()` so far (all threads).
fn wchar() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The size of the regular files under `dir`, recursively.
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Runs `team` to its end and checks it made `n` supersteps.
async fn run(team: &troupe::Workflow, n: u64) -> Result<(RunResult, Duration), BoxError> {
    let ctx = RunContext::new().with_run_id(RUN);
    let started = Instant::now();
    let result = team.run_task("go", &ctx).await?;
    let wall = started.elapsed();
    if result.thread.len() as u64 != n + 1 || result.turns != n {
        return Err(format!(
            "expected {} messages in {n} turns, got {} in {}",
            n + 1,
            result.thread.len(),
            result.turns
        )
        .into());
    }
    Ok((result, wall))
}

/// One run with a fresh store: its time, what it wrote, and the store (in
/// its directory) for the sizes and the load.
struct Stored {
    wall: Duration,
    written: u64,
    store: Arc<dyn CheckpointStore>,
    dir: tempfile::TempDir,
    result: RunResult,
}

async fn run_stored(args: &Ckpt<'_>) -> Result<Stored, BoxError> {
    let dir = tempfile::tempdir()?;
    let inner = store(args.store, args.durability, dir.path()).await?;
    let counted = Arc::new(Counted {
        inner: inner.clone(),
        bytes: AtomicU64::new(0),
    });
    // Memory goes through the counter; the file stores write to the
    // kernel, where `wchar` sees them without a layer in between.
    let saving: Arc<dyn CheckpointStore> = if args.store == "memory" {
        counted.clone()
    } else {
        inner.clone()
    };
    let team = ring(args.n + 1, Some(saving))?;
    let before = wchar();
    let (result, wall) = run(&team, args.n).await?;
    let written = if args.store == "memory" {
        counted.bytes.load(Ordering::Relaxed)
    } else {
        wchar() - before
    };
    Ok(Stored {
        wall,
        written,
        store: inner,
        dir,
        result,
    })
}

/// Measures one store kind at N supersteps; one JSON line's fields.
pub(super) async fn ckpt(args: &Ckpt<'_>) -> Result<Value, BoxError> {
    if args.n == 0 || args.reps == 0 {
        return Err("--n and --reps must be at least 1".into());
    }
    // Warm-up, untimed, as the peers' scripts do (20 supersteps).
    let warm = Ckpt { n: 20, ..*args };
    run(&ring(21, None)?, 20).await?;
    run_stored(&warm).await?;

    let bare = ring(args.n + 1, None)?;
    let (mut with, mut without, mut overheads, mut written) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..args.reps {
        let (_, plain) = run(&bare, args.n).await?;
        let stored = run_stored(args).await?;
        without.push(plain);
        with.push(stored.wall);
        overheads.push(us(stored.wall) - us(plain));
        written.push(stored.written);
        last = Some(stored);
    }
    let stored = last.ok_or("no repetition ran")?;
    overheads.sort_by(f64::total_cmp);
    written.sort_unstable();
    let overhead = overheads[overheads.len() / 2] / args.n as f64;
    let bytes_written = written[written.len() / 2];

    let metas = stored.store.list(RUN).await?;
    let checkpoints = metas.len();
    let payload_bytes = if args.store == "memory" {
        bytes_written
    } else {
        metas.iter().map(|m| m.payload_len).sum()
    };
    let mut latest_times = Vec::new();
    let mut last_bytes = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let cp = stored.store.latest(RUN).await?;
        latest_times.push(started.elapsed());
        last_bytes = cp.ok_or("no checkpoint saved")?.payload.len();
    }
    let mut loads = Vec::new();
    for i in 0..5 {
        // A workflow without a store of its own: resuming saves nothing.
        let resumer = ring(args.n + 1, None)?;
        let ctx = RunContext::new().with_run_id(format!("resume-{i}"));
        let started = Instant::now();
        let resumed = resumer
            .run_from_checkpoint(stored.store.as_ref(), RUN, None, &ctx)
            .await?;
        loads.push(started.elapsed());
        if resumed.thread.len() != stored.result.thread.len() {
            return Err(format!(
                "resumed with {} messages, the run ended with {}",
                resumed.thread.len(),
                stored.result.thread.len()
            )
            .into());
        }
    }
    let thread_encoded = codec::encode(&stored.result.thread)?.len() as u64;
    let disk = disk_bytes(stored.dir.path());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let n = args.n as f64;
    Ok(json!({
        "bench": "ckpt",
        "store": args.store,
        "durability": args.durability,
        "agents": 10,
        "n": args.n,
        "supersteps": args.n,
        "reps": args.reps,
        "checkpoints_saved": checkpoints,
        "per_superstep_us_ckpt": us(median(&mut with)) / n,
        "per_superstep_us_none": us(median(&mut without)) / n,
        "overhead_per_superstep_us": overhead,
        "overheads_us_all": overheads.iter().map(|o| o / n).collect::<Vec<_>>(),
        "bytes_written": bytes_written,
        "bytes_written_how": if args.store == "memory" { "payload bytes saved" } else { "wchar (write() bytes)" },
        "store_disk_bytes": disk,
        "last_checkpoint_bytes": last_bytes,
        "thread_encoded_bytes": thread_encoded,
        "written_per_thread": round1(bytes_written as f64 / thread_encoded.max(1) as f64),
        "payload_bytes": payload_bytes,
        "payload_per_thread": (payload_bytes as f64 / thread_encoded.max(1) as f64 * 100.0).round() / 100.0,
        "latest_ms": ms(median(&mut latest_times)),
        "load_last_ms": ms(median(&mut loads)),
        "avg_message_chars": round1(
            stored.result.thread.messages().iter().skip(1)
                .map(|m| m.text_content().len()).sum::<usize>() as f64 / n
        ),
        "wall_s": median(&mut with).as_secs_f64(),
        "figure": overhead,
        "unit": "µs/superstep overhead",
    }))
}
