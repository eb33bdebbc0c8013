//! One `ChatAgent` turn (scripted model) over threads of 10 to 10,000
//! messages, for each context policy:
//!
//! - `last_2/*` and `token_budget_200/*` should stay flat as the thread
//!   grows: trimming renders from the newest message back and stops once the
//!   window is full (a regression here once made a 2,000-message round
//!   robin 35× slower per message);
//! - `whole_thread/*` grows with the thread, as it must: every message is
//!   shown;
//! - `handoff/*`: a turn that hands off through a tool call, which must not
//!   copy the thread for tools that never read it.
//!
//! Run with `cargo bench -p troupe-agents --bench chat_turn`.

// Bench setup may fail loudly: a runtime that does not start or a scripted
// turn that fails leaves nothing to measure.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_main};
use tokio::runtime::Runtime;
use troupe_agents::{ChatAgent, ContextPolicy, ScriptedModel, ScriptedReply};
use troupe_runtime::{Agent, Message, RunContext, Thread};

const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

fn thread(len: usize) -> Arc<Thread> {
    let speakers = ["alice", "bob", "carol"];
    Arc::new(Thread::from_messages((0..len).map(|i| {
        Message::text(speakers[i % speakers.len()], format!("message number {i}"))
    })))
}

fn agent(context: ContextPolicy) -> ChatAgent {
    ChatAgent::builder("alice")
        .instructions("Answer briefly.")
        .model(ScriptedModel::from_fn(|_| Ok(ScriptedReply::text("ok"))))
        .context(context)
        .build()
        .expect("a valid chat agent")
}

fn handoff_agent() -> ChatAgent {
    ChatAgent::builder("alice")
        .model(ScriptedModel::from_fn(|_| {
            Ok(ScriptedReply::handoff("bob", "your turn"))
        }))
        .handoff("bob")
        .context(ContextPolicy::LastN(2))
        .build()
        .expect("a valid chat agent")
}

fn chat_turn(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("chat_turn");
    let policies = [
        ("last_2", ContextPolicy::LastN(2)),
        ("token_budget_200", ContextPolicy::TokenBudget(200)),
        ("whole_thread", ContextPolicy::WholeThread),
    ];
    for (name, policy) in policies {
        let agent = agent(policy);
        for len in SIZES {
            bench_turn(&mut group, &rt, &agent, name, len);
        }
    }
    let agent = handoff_agent();
    for len in SIZES {
        bench_turn(&mut group, &rt, &agent, "handoff", len);
    }
    group.finish();
}

fn bench_turn(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    agent: &ChatAgent,
    name: &str,
    len: usize,
) {
    let thread = thread(len);
    let ctx = RunContext::new();
    group.bench_with_input(BenchmarkId::new(name, len), &len, |b, _| {
        b.to_async(rt).iter(|| async {
            let reply = agent
                .run(thread.clone(), ctx.clone())
                .await
                .expect("a scripted turn");
            black_box(reply)
        });
    });
}

// criterion_group! defines a public, undocumented function; a private
// module keeps it out of the missing-docs lint's reach.
mod group {
    use super::{Criterion, Duration, chat_turn};

    criterion::criterion_group! {
        name = benches;
        config = Criterion::default()
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        targets = chat_turn
    }
}
criterion_main!(group::benches);
