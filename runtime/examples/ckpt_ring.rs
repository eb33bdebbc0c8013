//! What a checkpoint after every superstep costs a 10-agent ring of N
//! messages, per store, measured with the runtime alone (no model client):
//!
//! ```text
//! cargo run --release -p troupe-runtime --example ckpt_ring -- 1000 [ROUNDS] [fsync]
//! ```
//!
//! Each figure is the median of ROUNDS runs (5 by default); `fsync` adds
//! the stores with `Durability::Fsync`.
//!
//! Prints one JSON line per store: the overhead per superstep against the
//! same ring without a store, the bytes written in all, the last
//! checkpoint's size, the final thread encoded once, and the time to load
//! the last checkpoint (its chain folded) as a resume does.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe_runtime::store::{
    CheckpointStore, Durability, FileStore, MemoryStore, SqliteStore, load_whole,
};
use troupe_runtime::{
    FnAgent, Graph, RouterBuilder, RunContext, RunResult, StopCondition, Thread, Workflow, codec,
};

fn ring(n: u64, store: Option<Arc<dyn CheckpointStore>>) -> Result<Workflow, Box<dyn Error>> {
    let names: Vec<String> = (0..10).map(|i| format!("member{i}")).collect();
    let mut g = Graph::builder()
        .start(names[0].clone())
        .loop_limit(u32::MAX);
    for name in &names {
        g = g.add_agent(FnAgent::sync(name.clone(), |_: &Thread| Ok("noted, next")));
    }
    for (i, from) in names.iter().enumerate() {
        g = g.add_edge(from.clone(), names[(i + 1) % names.len()].clone());
    }
    let mut w = Workflow::builder()
        .name("rr10")
        .graph(g.build()?)
        .router(RouterBuilder::default())
        .stop_condition(StopCondition::max_messages(n));
    if let Some(store) = store {
        w = w.checkpoint_store(store);
    }
    Ok(w.build()?)
}

/// The median wall time of `rounds` runs, and the last result.
async fn timed(
    n: u64,
    rounds: usize,
    store: impl Fn(usize) -> Option<Arc<dyn CheckpointStore>>,
) -> Result<(Duration, RunResult), Box<dyn Error>> {
    let mut walls = Vec::new();
    let mut last = None;
    for i in 0..rounds {
        let team = ring(n, store(i))?;
        let ctx = RunContext::new().with_run_id(format!("bench{i}"));
        let started = Instant::now();
        let r = team.run_task("go", &ctx).await?;
        walls.push(started.elapsed());
        last = Some(r);
    }
    walls.sort();
    Ok((walls[walls.len() / 2], last.ok_or("no run")?))
}

fn dir_size(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|d| {
            d.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_size(&e.path()),
                    _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5)
        .max(1);
    let fsync = std::env::args().nth(3).is_some_and(|a| a == "fsync");
    let kinds: &[&str] = if fsync {
        &["memory", "file", "sqlite", "file-fsync", "sqlite-fsync"]
    } else {
        &["memory", "file", "sqlite"]
    };
    let (base, base_run) = timed(n, rounds, |_| None).await?;
    let supersteps = base_run.turns.max(1) as f64;
    let thread_once = codec::encode(&base_run.thread)?.len();
    let dir = tempfile::tempdir()?;
    for &kind in kinds {
        let root = dir.path().join(kind);
        std::fs::create_dir_all(&root)?;
        let stores: Vec<Arc<dyn CheckpointStore>> = (0..rounds)
            .map(|i| -> Result<Arc<dyn CheckpointStore>, Box<dyn Error>> {
                let r = root.join(i.to_string());
                Ok(match kind {
                    "memory" => Arc::new(MemoryStore::new().keep_last(usize::MAX)),
                    "file" => Arc::new(FileStore::open(&r)?),
                    "file-fsync" => {
                        Arc::new(FileStore::open(&r)?.with_durability(Durability::Fsync))
                    }
                    "sqlite" => Arc::new(SqliteStore::open(r.with_extension("db"))?),
                    _ => Arc::new(
                        SqliteStore::open(r.with_extension("db"))?
                            .with_durability(Durability::Fsync)?,
                    ),
                })
            })
            .collect::<Result<_, _>>()?;
        let (wall, _) = timed(n, rounds, |i| Some(stores[i].clone())).await?;
        let store = &stores[0];
        let metas = store.list("bench0").await?;
        let payloads: u64 = metas.iter().map(|m| m.payload_len).sum();
        let on_disk = match kind {
            "memory" => payloads,
            // Each round's database, with its WAL.
            "sqlite" | "sqlite-fsync" => dir_size(&root) / rounds as u64,
            _ => dir_size(&root.join("0")),
        };
        let started = Instant::now();
        let last = load_whole(store.as_ref(), "bench0", None)
            .await?
            .ok_or("no checkpoint")?;
        let load = started.elapsed();
        println!(
            "{{\"store\":\"{kind}\",\"messages\":{n},\"supersteps\":{supersteps},\"overhead_per_superstep_us\":{:.2},\"per_superstep_us\":{:.2},\"baseline_per_superstep_us\":{:.2},\"checkpoints\":{},\"payload_bytes_total\":{payloads},\"bytes_on_disk\":{on_disk},\"last_checkpoint_bytes\":{},\"thread_encoded_once_bytes\":{thread_once},\"load_last_us\":{:.1},\"last_folded_bytes\":{}}}",
            (wall.as_secs_f64() - base.as_secs_f64()) * 1e6 / supersteps,
            wall.as_secs_f64() * 1e6 / supersteps,
            base.as_secs_f64() * 1e6 / supersteps,
            metas.len(),
            metas.last().map_or(0, |m| m.payload_len),
            load.as_secs_f64() * 1e6,
            last.payload.len(),
        );
    }
    Ok(())
}
