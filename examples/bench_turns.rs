//! A profiling target for the per-turn path: two agents that do no work
//! answer each other for N turns (default 200,000), so nearly all the time a
//! profiler sees is the runtime's own.
//!
//! ```text
//! cargo build --release --example bench_turns
//! valgrind --tool=callgrind target/release/examples/bench_turns 20000
//! perf record -g target/release/examples/bench_turns
//! ```
//!
//! It prints the turns taken and the mean time per turn. Set
//! `BENCH_TURNS_THREADS=1` for a current-thread runtime, which makes a
//! profile easier to read (no work stealing between workers).

use std::error::Error;
use std::time::Instant;

use troupe::{FnAgent, Router, RunContext, StopCondition, Thread, Workflow};

fn main() -> Result<(), Box<dyn Error>> {
    let turns: u64 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 200_000,
    };
    let single_thread = std::env::var("BENCH_TURNS_THREADS").is_ok_and(|v| v == "1");
    let rt = if single_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
    };

    let rally = Workflow::builder()
        .name("rally")
        .participant(FnAgent::sync("ping", |_: &Thread| Ok("ping")))
        .participant(FnAgent::sync("pong", |_: &Thread| Ok("pong")))
        .router(
            Router::builder()
                .add_route("user", "ping")
                .add_route("ping", "pong")
                .add_route("pong", "ping"),
        )
        // The input counts as a message: turns + 1 messages is `turns` turns.
        .stop_condition(StopCondition::max_messages(turns + 1))
        .build()?;

    let started = Instant::now();
    let result = rt.block_on(rally.run_task("serve", &RunContext::new()))?;
    let elapsed = started.elapsed();
    println!(
        "{} turns in {:.1} ms: {:.2} µs per turn ({})",
        result.turns,
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / result.turns.max(1) as f64,
        result.status
    );
    Ok(())
}
