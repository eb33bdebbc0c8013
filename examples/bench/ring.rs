//! The checkpoint workload's team, shared by `bench ckpt` and
//! `bench_presets checkpoint_*`: a ring of 10 function agents, one agent
//! per superstep, each turn appending one short message, with a
//! checkpoint after every superstep when a store is given.

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use troupe::store::{CheckpointStore, Durability, FileStore, MemoryStore, SqliteStore};
use troupe::{FnAgent, Graph, RouterBuilder, StopCondition, Thread, Workflow};

/// The agents in the ring.
const AGENTS: usize = 10;

/// A 10-agent round robin until `messages` messages (the task included),
/// checkpointing into `store` after every superstep.
///
/// Built by hand as `RoundRobinGroupChat` builds it (a ring and a
/// broadcast router): the preset's builder has no way to set a checkpoint
/// store. Agent `agent-i` appends "agent-i says message k of the run" (the
/// peers' ~35-character text), k counting the agents' messages from 1.
pub fn ring(
    messages: u64,
    store: Option<Arc<dyn CheckpointStore>>,
) -> Result<Workflow, Box<dyn Error>> {
    let names: Vec<String> = (0..AGENTS).map(|i| format!("agent-{i}")).collect();
    let mut graph = Graph::builder()
        .start(names[0].clone())
        .loop_limit(u32::MAX);
    for name in &names {
        let me = name.clone();
        graph = graph.add_agent(FnAgent::sync(name.clone(), move |t: &Thread| {
            // The thread holds the task and the k - 1 messages before.
            Ok(format!("{me} says message {} of the run", t.len()))
        }));
    }
    for (i, from) in names.iter().enumerate() {
        graph = graph.add_edge(from.clone(), names[(i + 1) % names.len()].clone());
    }
    let mut team = Workflow::builder()
        .name("ring10")
        .graph(graph.build()?)
        .router(RouterBuilder::default())
        .stop_condition(StopCondition::max_messages(messages));
    if let Some(store) = store {
        team = team.checkpoint_store(store);
    }
    Ok(team.build()?)
}

/// A store of kind `memory`, `file` (a `FileStore` in `dir/files`) or
/// `sqlite` (a `SqliteStore` on `dir/cp.sqlite3`) at `durability`.
pub fn open_store(
    kind: &str,
    dir: &Path,
    durability: Durability,
) -> Result<Arc<dyn CheckpointStore>, Box<dyn Error>> {
    Ok(match kind {
        "memory" if durability == Durability::Fsync => {
            return Err("--durability fsync: a memory store has no disk to sync".into());
        }
        "memory" => Arc::new(MemoryStore::new().with_durability(durability)),
        "file" => Arc::new(FileStore::open(dir.join("files"))?.with_durability(durability)),
        "sqlite" => {
            Arc::new(SqliteStore::open(dir.join("cp.sqlite3"))?.with_durability(durability)?)
        }
        other => return Err(format!("store '{other}': memory, file or sqlite").into()),
    })
}
