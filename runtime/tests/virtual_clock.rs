//! One clock for a run: retry backoff, stop timeouts, deadlines, max wait
//! and message timestamps all follow tokio's time, so on a paused clock
//! hours pass in no real time and exactly as scheduled.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use troupe_runtime::{
    AgentError, Clock, FnAgent, RetryPolicy, RunClock, RunContext, RunStatus, StopCondition,
    Thread, Workflow,
};

const HOUR: Duration = Duration::from_secs(3600);

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(7 * 24 * 3600), f)
        .await
        .expect("the run hung")
}

#[tokio::test(start_paused = true)]
async fn retry_backoff_waits_in_virtual_time() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = attempts.clone();
    let flaky = FnAgent::sync("flaky", move |_: &Thread| {
        if seen.fetch_add(1, Ordering::SeqCst) < 2 {
            Err(AgentError::transient("busy"))
        } else {
            Ok("done")
        }
    });
    let wf = Workflow::builder()
        .participant(flaky)
        .retry("flaky", RetryPolicy::fixed(3, HOUR))
        .build()
        .unwrap();
    let real = std::time::Instant::now();
    let start = Instant::now();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "done");
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    // Two backoffs of an hour each, on the virtual clock only.
    assert_eq!(Instant::now() - start, 2 * HOUR);
    assert!(real.elapsed() < Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn a_stop_timeout_fires_at_its_virtual_time() {
    let wf = Workflow::builder()
        .participant(FnAgent::new("sleeper", |_, _| async {
            tokio::time::sleep(10 * HOUR).await;
            Ok::<_, AgentError>("woke")
        }))
        .stop_condition(StopCondition::timeout(HOUR))
        .build()
        .unwrap();
    let start = Instant::now();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    match r.status {
        RunStatus::Stopped(reason) => assert_eq!(reason.condition, "timeout(1h)"),
        other => panic!("{other:?}"),
    }
    assert_eq!(Instant::now() - start, HOUR);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_fires_at_its_virtual_time() {
    let wf = Workflow::builder()
        .participant(FnAgent::new("sleeper", |_, _| async {
            tokio::time::sleep(10 * HOUR).await;
            Ok::<_, AgentError>("woke")
        }))
        .build()
        .unwrap();
    let start = Instant::now();
    let ctx = RunContext::new().with_deadline(start + 2 * HOUR);
    let _ = guard(wf.run_task("go", &ctx)).await;
    assert_eq!(Instant::now() - start, 2 * HOUR);
}

#[tokio::test(start_paused = true)]
async fn message_timestamps_follow_the_virtual_clock() {
    let wf = Workflow::builder()
        .participant(FnAgent::new("sleeper", |_, _| async {
            tokio::time::sleep(HOUR).await;
            Ok::<_, AgentError>("an hour later")
        }))
        .build()
        .unwrap();
    let before = RunClock.now();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    let said = r.thread.last().unwrap();
    assert_eq!(said.created_at.duration_since(before).unwrap(), HOUR);
}
