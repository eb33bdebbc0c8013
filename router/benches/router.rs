//! Hot paths the runtime takes per message: inbox push + take, and
//! `Router::targets` on a large router.

// Bench setup may fail loudly: its configurations are fixed and valid.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, Throughput, criterion_main};
use troupe_router::{Envelope, Inbox, InboxConfig, Router};

struct Msg {
    from: &'static str,
    at: SystemTime,
}

impl Envelope for Msg {
    fn sender(&self) -> &str {
        self.from
    }
    fn created_at(&self) -> SystemTime {
        self.at
    }
}

fn inbox(c: &mut Criterion) {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let mut group = c.benchmark_group("inbox");
    for batch in [1usize, 10] {
        // A realistic inbox: filtered, bounded, with a ttl to check.
        let config = InboxConfig::new()
            .senders(["planner", "critic"])
            .batch_size(batch)
            .capacity(100)
            .ttl(Duration::from_secs(3600));
        let mut inbox = Inbox::new(config).expect("valid config");
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(format!("push+take_batch/batch={batch}"), |b| {
            b.iter(|| {
                for _ in 0..batch {
                    let pushed = inbox.push(
                        Msg {
                            from: "critic",
                            at: now,
                        },
                        black_box(now),
                    );
                    black_box(pushed.is_accepted());
                }
                black_box(inbox.take_batch(black_box(now)))
            });
        });
    }

    // A long-lived backlog: a take must not rescan the whole queue for
    // expired messages on every call.
    let config = InboxConfig::new().ttl(Duration::from_secs(3600));
    let mut inbox = Inbox::new(config).expect("valid config");
    for _ in 0..1_000 {
        let _ = inbox.push(
            Msg {
                from: "critic",
                at: now,
            },
            now,
        );
    }
    group.throughput(Throughput::Elements(1));
    group.bench_function("push+take_batch/batch=1/backlog=1000", |b| {
        b.iter(|| {
            let pushed = inbox.push(
                Msg {
                    from: "critic",
                    at: now,
                },
                black_box(now),
            );
            black_box(pushed.is_accepted());
            black_box(inbox.take_batch(black_box(now)))
        });
    });
    group.finish();
}

fn targets(c: &mut Criterion) {
    let names: Vec<String> = (0..1_000).map(|i| format!("agent-{i}")).collect();
    // Half the team routed in a chain (each hears its predecessor), a tenth
    // listening to everyone, the rest on the default broadcast.
    let mut builder = Router::builder().add_route(Router::USER, names[0].as_str());
    for i in 1..500 {
        builder = builder.add_route(names[i - 1].as_str(), names[i].as_str());
    }
    for name in &names[500..600] {
        builder = builder.add_route(Router::ANY, name.as_str());
    }
    let router = builder.build(&names).expect("valid router");
    let senders: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .chain([Router::USER, "stranger"])
        .collect();

    let mut group = c.benchmark_group("router");
    group.throughput(Throughput::Elements(senders.len() as u64));
    group.bench_function("targets/1000_participants", |b| {
        b.iter(|| {
            let mut total = 0;
            for sender in &senders {
                total += router.targets(black_box(sender)).len();
            }
            black_box(total)
        });
    });
    group.finish();
}

// criterion_group! defines a public, undocumented function; a private
// module keeps it out of the missing-docs lint's reach.
mod group {
    use super::{Criterion, Duration, inbox, targets};

    criterion::criterion_group! {
        name = benches;
        config = Criterion::default()
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        targets = inbox, targets
    }
}
criterion_main!(group::benches);
