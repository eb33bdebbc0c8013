//! Every preset under every kind of stop condition: text mention, max
//! messages, handoff and timeout each stop it where expected.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use troupe_presets::{MapReduce, RoundRobinGroupChat, SelectorGroupChat, Sequential, Swarm};
use troupe_runtime::{
    AgentError, FnAgent, Message, RunContext, RunStatus, StopCondition, Thread, Workflow,
};

/// What the four participants say, in order: the second mentions DONE,
/// the third hands off to the user; `slow` makes the second take 10 s.
fn says(i: usize, slow: bool, handoffs: bool) -> FnAgent {
    let name = format!("s{i}");
    let text = ["one", "two DONE", "three", "four"][i - 1];
    let next = if i == 3 {
        "user".to_string()
    } else {
        format!("s{}", i % 4 + 1)
    };
    let target = next.clone();
    let agent = FnAgent::new(name, move |_: std::sync::Arc<Thread>, _| {
        let target = target.clone();
        async move {
            if slow && i == 2 {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Ok::<_, AgentError>(if i == 3 || handoffs {
                Message::handoff("", target, text)
            } else {
                Message::text("", text)
            })
        }
    });
    agent.with_handoffs([next])
}

type Build = fn(StopCondition, bool) -> Workflow;

fn sequential(stop: StopCondition, slow: bool) -> Workflow {
    (1..=4)
        .fold(Sequential::builder(), |b, i| {
            b.participant(says(i, slow, false))
        })
        .stop_condition(stop)
        .build()
        .unwrap()
}

fn round_robin(stop: StopCondition, slow: bool) -> Workflow {
    (1..=4)
        .fold(RoundRobinGroupChat::builder(), |b, i| {
            b.participant(says(i, slow, false))
        })
        .stop_condition(stop)
        .build()
        .unwrap()
}

fn selector(stop: StopCondition, slow: bool) -> Workflow {
    (1..=4)
        .fold(SelectorGroupChat::builder(), |b, i| {
            b.participant(says(i, slow, false))
        })
        .selector_fn(|input| {
            let next = match input.previous {
                None => 1,
                Some(p) => p[1..].parse::<usize>().unwrap() % 4 + 1,
            };
            Some(format!("s{next}"))
        })
        .stop_condition(stop)
        .build()
        .unwrap()
}

fn swarm(stop: StopCondition, slow: bool) -> Workflow {
    (1..=4)
        .fold(Swarm::builder(), |b, i| b.participant(says(i, slow, true)))
        .stop_condition(stop)
        .build()
        .unwrap()
}

/// mapper (s1's text) → two workers ("two DONE" from s2) → reducer that
/// hands off to the user.
fn map_reduce(stop: StopCondition, slow: bool) -> Workflow {
    MapReduce::builder()
        .mapper(FnAgent::sync("s1", |_: &Thread| Ok("one\nanother")))
        .worker(says(2, slow, false))
        .reducer(FnAgent::sync("s3", |_: &Thread| {
            Ok(Message::handoff("", "user", "three"))
        }))
        .stop_condition(stop)
        .build()
        .unwrap()
}

async fn run(build: Build, stop: StopCondition, slow: bool) -> (RunStatus, Option<String>, usize) {
    let wf = build(stop, slow);
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        wf.run_task("go", &RunContext::new()),
    )
    .await
    .expect("stopped in time")
    .unwrap();
    let last = r.final_response.map(|m| m.source.to_string());
    (r.status, last, r.thread.len())
}

#[tokio::test]
async fn each_condition_stops_each_preset_where_expected() {
    let presets: [(&str, Build, &str); 5] = [
        ("sequential", sequential, "s2"),
        ("round_robin", round_robin, "s2"),
        ("selector", selector, "s2"),
        ("swarm", swarm, "s2"),
        ("map_reduce", map_reduce, "map"),
    ];
    for (name, build, mentions_done) in presets {
        // Text mention: the first message saying DONE.
        let (status, last, _) = run(build, StopCondition::text_mention("DONE"), false).await;
        assert!(
            matches!(status, RunStatus::Stopped(ref r) if r.condition.starts_with("text_mention")),
            "{name}: {status:?}"
        );
        assert_eq!(last.as_deref(), Some(mentions_done), "{name}: text mention");

        // Max messages: the task and the first answer.
        let (status, last, len) = run(build, StopCondition::max_messages(2), false).await;
        assert!(
            matches!(status, RunStatus::Stopped(ref r) if r.condition == "max_messages(2)"),
            "{name}: {status:?}"
        );
        assert_eq!(
            (last.as_deref(), len),
            (Some("s1"), 2),
            "{name}: max messages"
        );

        // Handoff to the user: s3 hands off.
        let (status, last, _) = run(build, StopCondition::handoff("user"), false).await;
        assert!(
            matches!(status, RunStatus::Stopped(ref r) if r.condition == "handoff(user)"),
            "{name}: {status:?}"
        );
        assert_eq!(last.as_deref(), Some("s3"), "{name}: handoff");

        // Timeout: s2 takes 10 s; the run stops after 100 ms with s1's answer.
        let started = std::time::Instant::now();
        let (status, last, _) = run(
            build,
            StopCondition::timeout(Duration::from_millis(100)),
            true,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{name}: timeout took {:?}",
            started.elapsed()
        );
        assert!(
            matches!(status, RunStatus::Stopped(ref r) if r.condition.starts_with("timeout")),
            "{name}: {status:?}"
        );
        assert_eq!(last.as_deref(), Some("s1"), "{name}: timeout");
    }
}
