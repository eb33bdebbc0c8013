//! A MapReduce whose workers are spread over two other processes.
//!
//! Three nodes on 127.0.0.1: two worker nodes (`b`, `c`) each host an agent
//! named `worker`; a coordinator node joins them and runs a MapReduce whose
//! workers are [`RemoteAgent`]s taking turns over the two replicas. Each
//! worker answers with the node it ran on, so the result shows the spread.
//! See `examples/cluster/README.md`.
//!
//! ```text
//! export TROUPE_COOKIE=change-me                      # every node, same value
//! cargo run --example cluster -- worker b 127.0.0.1:7001
//! cargo run --example cluster -- worker c 127.0.0.1:7002
//! cargo run --example cluster -- coordinator 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002
//! ```

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use troupe::cluster::{NodeSettings, RemoteAgent, serve};
use troupe::presets::MapReduce;
use troupe::{Agent, FnAgent, RunContext, Thread};

const USAGE: &str = "usage:
  cluster worker NAME LISTEN                  host the `worker` agent until Ctrl-C
  cluster coordinator LISTEN PEER [PEER...]   run the MapReduce over the peers
the cookie comes from the TROUPE_COOKIE environment variable";

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// The worker a node hosts: it "reviews" one chapter (a pause stands for
/// the model call) and says where it ran.
fn worker(node: String) -> Arc<dyn Agent> {
    Arc::new(
        FnAgent::new("worker", move |t: Arc<Thread>, _ctx| {
            let node = node.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let chapter = last_text(&t);
                let words = chapter.split_whitespace().count();
                Ok(format!("{chapter}: {words} words, reviewed on node {node}"))
            }
        })
        .with_description("reviews one chapter"),
    )
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["worker", name, listen] => {
            let settings = NodeSettings::new(*name, *listen).cookie_from_env()?;
            // Runs until Ctrl-C; prints a line once it listens.
            serve(settings, vec![worker(name.to_string())]).await?;
        }
        ["coordinator", listen, peers @ ..] if !peers.is_empty() => {
            coordinator(listen, peers).await?;
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
    Ok(())
}

async fn coordinator(listen: &str, peers: &[&str]) -> Result<(), Box<dyn Error>> {
    let mut settings = NodeSettings::new("coordinator", listen).cookie_from_env()?;
    for peer in peers {
        settings = settings.connect(*peer);
    }
    // Waits (up to 30 s) for worker nodes that are not up yet.
    let node = settings.start(Vec::new()).await?;
    let replicas = node
        .wait_for_agent("worker", peers.len(), Duration::from_secs(10))
        .await?;
    println!("worker replicas on nodes: {}", replicas.join(", "));

    let team = MapReduce::builder()
        .name("review")
        .split(|t: &Thread| {
            last_text(t)
                .split(';')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        // One remote agent for every worker of the map: its turns take
        // turns over the replicas (placement: spread). A node lost mid-turn
        // fails over to the other replica.
        .worker(RemoteAgent::new("worker")?.failover(1))
        .reducer(FnAgent::sync("editor", |t: &Thread| {
            Ok(t.messages()
                .iter()
                .filter(|m| m.metadata.contains_key("worker"))
                .map(|m| format!("- {}", m.text_content()))
                .collect::<Vec<_>>()
                .join("\n"))
        }))
        .build()?;
    let book = "Actors and mailboxes; Supervision trees; Routing messages; \
                Checkpoints and resume; Nodes and cookies; Spreading the work";
    let result = team.run_task(book, &RunContext::console()).await?;
    println!("\n{}\n\n{}", result.status, result.final_text());
    node.shutdown().await;
    Ok(())
}
