//! Checkpoints and resume: a graph workflow saves its state in a directory
//! after every superstep; the run is cancelled partway, and a fresh
//! workflow value — as another process would build it — resumes from the
//! latest checkpoint and finishes. The result is compared with a run that
//! was never interrupted.
//!
//! Run with `cargo run --example resume`.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use troupe_runtime::store::{CheckpointStore, FileStore};
use troupe_runtime::{AgentError, Event, FnAgent, Graph, RunContext, RunStatus, Thread, Workflow};

/// An editorial pipeline: each stage works a little, then passes on.
fn pipeline(store: Arc<dyn CheckpointStore>) -> Result<Workflow, Box<dyn Error>> {
    let stages = ["outline", "draft", "facts", "style", "headline", "layout"];
    let mut graph = Graph::builder();
    for stage in stages {
        graph = graph.add_agent(FnAgent::new(stage, move |t: Arc<Thread>, _| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let before = t
                .last()
                .map(|m| m.text_content().into_owned())
                .unwrap_or_default();
            Ok::<_, AgentError>(format!("{before} | {stage} done"))
        }));
    }
    for pair in stages.windows(2) {
        graph = graph.add_edge(pair[0], pair[1]);
    }
    Ok(Workflow::builder()
        .name("newsroom")
        .graph(graph.build()?)
        .checkpoint_store(store)
        .build()?)
}

fn transcript(t: &Thread) -> Vec<String> {
    t.messages()
        .iter()
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("troupe-resume-{}", std::process::id()));
    let store: Arc<dyn CheckpointStore> = Arc::new(FileStore::open(&dir)?);
    println!("checkpoints in {}", dir.display());

    // 1. Run, and cancel once three supersteps are done.
    let (ctx, mut events) = RunContext::stream();
    let ctx = ctx.with_run_id("edition-42");
    let canceller = ctx.clone();
    let watcher = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            println!("{event}");
            if matches!(event.event, Event::SuperstepCompleted { superstep: 3, .. }) {
                canceller.cancel();
            }
        }
    });
    let interrupted = pipeline(store.clone())?
        .run_task("storm warning", &ctx)
        .await?;
    // The watcher holds a context itself, so its stream never closes: stop it.
    watcher.abort();
    println!("\nfirst run: {}", interrupted.status);
    let checkpoints = store.list("edition-42").await?;
    println!(
        "{} checkpoints saved, the latest after superstep {}",
        checkpoints.len(),
        checkpoints.last().map_or(0, |c| c.superstep)
    );

    // 2. A fresh workflow value resumes from the latest checkpoint.
    let console = RunContext::console();
    let resumed = pipeline(store.clone())?
        .resume("edition-42", &console)
        .await?;
    console.sink().flush().await; // its events are all printed first
    println!("\nresumed run: {}", resumed.status);

    // 3. The same work, never interrupted, for comparison.
    let scratch: Arc<dyn CheckpointStore> = Arc::new(FileStore::open(dir.join("scratch"))?);
    let whole = pipeline(scratch)?
        .run_task("storm warning", &RunContext::new())
        .await?;

    let same = transcript(&resumed.thread) == transcript(&whole.thread)
        && resumed.final_text() == whole.final_text()
        && resumed.status == RunStatus::Completed;
    println!("\nfinal response: {}", resumed.final_text());
    println!(
        "resumed result equals an uninterrupted run: {}",
        if same { "yes" } else { "NO" }
    );
    let _ = std::fs::remove_dir_all(&dir);
    if same {
        Ok(())
    } else {
        Err("the resumed run differs from the uninterrupted one".into())
    }
}
