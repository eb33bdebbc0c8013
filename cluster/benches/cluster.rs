//! What a remote turn costs over loopback, beside the same work done
//! locally:
//!
//! - `cluster/round_trip/*`: one turn of an agent that answers at once —
//!   called directly (`local_direct`), through an agent host in the same
//!   process (`local_host`: encoding, the host actor, no network), and on
//!   another process over 127.0.0.1 (`remote`);
//! - `cluster/fan_out_1000/*`: a router-only workflow of 1,000
//!   participants that each answer the user once (like `spawn/participants`
//!   of the runtime bench): local agents, then remote ones all hosted by
//!   the other process.
//!
//! The bench starts the other node itself (this binary again, with
//! `TROUPE_BENCH_NODE` set) and kills it at the end. Run with
//! `cargo bench -p troupe-cluster --bench cluster`; figures are recorded in
//! BENCHMARKS.md at the workspace root.

// Bench setup may fail loudly: a node that does not start or a turn that
// fails leaves nothing to measure.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use tokio::runtime::Runtime;
use troupe_cluster::{Node, RemoteAgent};
use troupe_runtime::{Agent, FnAgent, Message, RouterBuilder, RunContext, Thread, Workflow};

const CHILD: &str = "TROUPE_BENCH_NODE";
const COOKIE: &str = "bench-cookie";

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benches")
}

fn echo(name: &str) -> FnAgent {
    FnAgent::sync(name, |_: &Thread| Ok("ok"))
}

/// The other node: hosts `echo` until its stdin closes.
fn child_main() {
    let rt = runtime();
    rt.block_on(async {
        let node = Node::builder()
            .name("b")
            .listen("127.0.0.1:0")
            .cookie(COOKIE)
            .host(echo("echo"))
            .start()
            .await
            .expect("the bench node starts");
        println!("READY {}", node.addr());
        // Blocking read on a thread of its own: the runtime keeps serving.
        let _ = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
        })
        .await;
        node.shutdown().await;
    });
}

/// The other node's process, killed and reaped when dropped.
struct ChildNode(Child);

impl Drop for ChildNode {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_child() -> (ChildNode, String) {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut child = Command::new(exe)
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the bench node process starts");
    let out = child.stdout.take().expect("a piped stdout");
    let guard = ChildNode(child);
    let mut line = String::new();
    let mut reader = BufReader::new(out);
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("the node's output");
        assert!(n > 0, "the bench node exited before it was ready");
        if let Some(addr) = line.trim().strip_prefix("READY ") {
            return (guard, addr.to_string());
        }
    }
}

/// 1,000 participants that each answer the user once.
fn fan(agents: Vec<Arc<dyn Agent>>) -> Workflow {
    let mut router = RouterBuilder::new();
    for a in &agents {
        router = router.add_route("user", a.name()).output(a.name());
    }
    Workflow::builder()
        .name("fan")
        .participants(agents)
        .router(router)
        .build()
        .expect("a valid fan workflow")
}

fn main() {
    if std::env::var(CHILD).is_ok() {
        child_main();
        return;
    }
    let (_child, addr) = start_child();
    let rt = runtime();
    let node = rt.block_on(async {
        let node = Node::builder()
            .name("a")
            .listen("127.0.0.1:0")
            .cookie(COOKIE)
            .host(echo("echo_local"))
            .connect(&addr)
            .start()
            .await
            .expect("the bench coordinator starts");
        node.wait_for_agent("echo", 1, Duration::from_secs(10))
            .await
            .expect("the remote echo is known");
        node
    });

    let mut c = Criterion::default().configure_from_args();
    let thread = Arc::new(Thread::from_messages([Message::user("ping")]));
    let ctx = RunContext::new().child("bench").child("echo");

    let mut group = c.benchmark_group("cluster/round_trip");
    group.throughput(Throughput::Elements(1));
    let direct = echo("echo");
    group.bench_function("local_direct", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                direct
                    .run(thread.clone(), ctx.clone())
                    .await
                    .expect("a reply"),
            )
        });
    });
    let local = RemoteAgent::parse("echo_local@a").expect("a valid spec");
    group.bench_function("local_host", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                local
                    .run(thread.clone(), ctx.clone())
                    .await
                    .expect("a reply"),
            )
        });
    });
    let remote = RemoteAgent::parse("echo@b").expect("a valid spec");
    group.bench_function("remote", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                remote
                    .run(thread.clone(), ctx.clone())
                    .await
                    .expect("a reply"),
            )
        });
    });
    group.finish();

    let mut group = c.benchmark_group("cluster/fan_out_1000");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(1000));
    let local_fan = fan((0..1000)
        .map(|i| Arc::new(echo(&format!("echo#{i}"))) as Arc<dyn Agent>)
        .collect());
    let remote_fan = fan(RemoteAgent::new("echo")
        .expect("a valid name")
        .replicate(1000));
    for (name, wf) in [("local", &local_fan), ("remote", &remote_fan)] {
        let check = rt
            .block_on(wf.run_task("go", &RunContext::new()))
            .expect("the fan runs");
        assert_eq!(check.turns, 1000);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let r = wf
                    .run_task("go", &RunContext::new())
                    .await
                    .expect("the fan runs");
                black_box(r.turns)
            });
        });
    }
    group.finish();
    c.final_summary();
    rt.block_on(node.shutdown());
}
