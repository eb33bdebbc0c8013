//! The `idle` and `idle_spawned` workloads: how much memory K agents of a
//! running workflow take while they wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe::{FnAgent, Graph, Reply, Router, RunContext, Thread, Workflow, graph::Join};

use super::{BoxError, current_rss_kib, round1};

pub(super) async fn idle(k: usize) -> Result<Value, BoxError> {
    let rss_before = current_rss_kib();
    let started = Instant::now();
    // The probe runs while every other agent is hosted and waiting; it
    // reads the RSS then and says nothing, so nobody is woken.
    let seen = Arc::new(AtomicU64::new(0));
    let probe = {
        let seen = seen.clone();
        FnAgent::sync("probe", move |_: &Thread| {
            seen.store(current_rss_kib() as u64, Ordering::Relaxed);
            Ok(Reply::empty())
        })
    };
    let mut router = Router::builder().add_route(Router::USER, "probe");
    let mut flow = Workflow::builder().name("idle").participant(probe);
    for i in 0..k {
        let name = format!("idle{i}");
        // Reachable (so the router accepts them) but never sent anything.
        router = router.add_route("probe", name.clone()).output(name.clone());
        flow = flow.participant(FnAgent::sync(name, |_: &Thread| Ok(Reply::empty())));
    }
    let flow = flow.router(router).build()?;
    let built = started.elapsed();
    let result = flow.run_task("measure", &RunContext::new()).await?;
    let wall = started.elapsed();
    if result.turns != 1 {
        return Err(format!(
            "expected the probe's turn alone, got {} turns",
            result.turns
        )
        .into());
    }
    let hosting = seen.load(Ordering::Relaxed) as f64;
    idle_line("idle", k, built, wall, rss_before, hosting)
}

/// As `idle`, but every agent has taken one turn first, so each has its
/// own actor (mailbox, task) spawned and waiting when the RSS is read.
pub(super) async fn idle_spawned(k: usize) -> Result<Value, BoxError> {
    let rss_before = current_rss_kib();
    let started = Instant::now();
    let mut graph = Graph::builder()
        .start("wake")
        .add_agent(FnAgent::sync("wake", |_: &Thread| Ok("wake up")))
        .add_agent(FnAgent::sync("probe", |_: &Thread| {
            Ok((current_rss_kib() as u64).to_string())
        }))
        .join("probe", Join::All);
    for i in 0..k {
        let name = format!("idle{i}");
        graph = graph
            .add_agent(FnAgent::sync(name.clone(), |_: &Thread| Ok("ready")))
            .add_edge("wake", name.clone())
            .add_edge(name, "probe");
    }
    let flow = Workflow::builder()
        .name("idle")
        .graph(graph.build()?)
        .build()?;
    let built = started.elapsed();
    let result = flow.run_task("measure", &RunContext::new()).await?;
    let wall = started.elapsed();
    let hosting: f64 = result
        .final_text()
        .parse()
        .map_err(|_| format!("probe answered {:?}", result.final_text()))?;
    idle_line("idle_spawned", k, built, wall, rss_before, hosting)
}

fn idle_line(
    bench: &str,
    k: usize,
    built: Duration,
    wall: Duration,
    rss_before: f64,
    hosting: f64,
) -> Result<Value, BoxError> {
    let per_agent_kib = (hosting - rss_before) / k as f64;
    Ok(json!({
        "bench": bench,
        "k": k,
        "build_s": built.as_secs_f64(),
        "wall_s": wall.as_secs_f64(),
        "rss_before_mib": round1(rss_before / 1024.0),
        "rss_hosting_mib": round1(hosting / 1024.0),
        "rss_per_agent_kib": round1(per_agent_kib),
        "figure": round1(per_agent_kib),
        "unit": "KiB/agent",
    }))
}
