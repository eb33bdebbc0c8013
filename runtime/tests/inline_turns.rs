//! A turn that still waits after its actor's first poll comes back to its
//! run, whose supervisor task polls it to its end (`WaitingTurn`), beside
//! any other turns of the run waiting too. These tests drive turns that
//! wait before they end, so they take that path: its panics, its
//! neighbours waiting at the same time, its cancellation — on shared actors
//! and on a run's own (a workflow that keeps no actors).

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use troupe_runtime::{
    AgentError, Event, FnAgent, RetryPolicy, Router, RunContext, RunError, RunStatus, Thread,
    Workflow,
};

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the run hung")
}

/// An agent that waits `ms` (its turn goes back to the run), then answers
/// with its name.
fn waiter(name: &'static str, ms: u64) -> FnAgent {
    FnAgent::new(name, move |_, _| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, AgentError>(name)
    })
}

/// Panics on its first call, after waiting; answers on the next.
fn shaky(calls: Arc<AtomicU32>) -> FnAgent {
    FnAgent::new("shaky", move |_, _| {
        let calls = calls.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("broke while waiting");
            }
            Ok::<_, AgentError>("steady")
        }
    })
}

#[tokio::test]
async fn a_turn_that_panics_while_waiting_is_retried_then_fails_as_a_panic() {
    for reuse in [true, false] {
        let calls = Arc::new(AtomicU32::new(0));
        let wf = Workflow::builder()
            .participant(shaky(calls.clone()))
            .retry("shaky", RetryPolicy::fixed(2, Duration::ZERO))
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
        assert_eq!(r.final_text(), "steady", "reuse_actors({reuse})");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "reuse_actors({reuse})");

        // No attempt left: the panic fails the run, and says what broke.
        let wf = Workflow::builder()
            .participant(shaky(Arc::new(AtomicU32::new(0))))
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let err = guard(wf.run_task("go", &RunContext::new()))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
        assert!(err.to_string().contains("broke while waiting"), "{err}");
    }
}

#[tokio::test]
async fn turns_beside_a_waiting_turn_run_at_the_same_time() {
    let wf = Workflow::builder()
        .participant(waiter("a", 50))
        .participant(waiter("b", 50))
        .participant(waiter("c", 50))
        .router(
            Router::builder()
                .add_route("user", "a")
                .add_route("user", "b")
                .add_route("user", "c")
                .output("a")
                .output("b")
                .output("c"),
        )
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("go", &ctx)).await.unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    let mut texts: Vec<String> = r
        .thread
        .messages()
        .iter()
        .skip(1)
        .map(|m| m.text_content().into_owned())
        .collect();
    texts.sort();
    assert_eq!(texts, ["a", "b", "c"]);
    // All three were under way before any ended: the run polls them side by
    // side, and none kept the others waiting.
    let mut started = 0;
    while let Some(e) = events.next().await {
        match &e.event {
            Event::AgentStarted { .. } => started += 1,
            Event::MessageProduced { message, .. } if message.source.as_ref() != "user" => {
                assert_eq!(started, 3, "a turn ended before all had started");
                break;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_waiting_turn_cancelled_ends_cancelled_on_shared_or_own_actors() {
    for reuse in [true, false] {
        let wf = Workflow::builder()
            .participant(waiter("sleeper", 10_000))
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let canceller = ctx.clone();
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                if matches!(e.event, Event::AgentStarted { .. }) {
                    // Once the turn waits (and has come back to the run).
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    canceller.cancel();
                }
            }
        });
        let r = guard(wf.run_task("go", &ctx)).await.unwrap();
        assert_eq!(r.status, RunStatus::Cancelled, "reuse_actors({reuse})");
        assert_eq!(r.thread.len(), 1, "reuse_actors({reuse})");
        // Cut short, it runs again on resume: the run says so.
        let thread: &Thread = &r.thread;
        assert!(thread.state().is_some(), "reuse_actors({reuse})");
    }
}

/// Several turns waiting side by side (the first polled alone, the others
/// beside it) all end cancelled when the run is cancelled, on shared or own
/// actors, and the run keeps the state it would resume from.
#[tokio::test]
async fn waiting_turns_side_by_side_all_end_cancelled() {
    for reuse in [true, false] {
        let wf = Workflow::builder()
            .participant(waiter("a", 10_000))
            .participant(waiter("b", 10_000))
            .participant(waiter("c", 10_000))
            .router(
                Router::builder()
                    .add_route("user", "a")
                    .add_route("user", "b")
                    .add_route("user", "c")
                    .output("a")
                    .output("b")
                    .output("c"),
            )
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let canceller = ctx.clone();
        tokio::spawn(async move {
            let mut started = 0;
            while let Some(e) = events.next().await {
                if matches!(e.event, Event::AgentStarted { .. }) {
                    started += 1;
                    if started == 3 {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        canceller.cancel();
                    }
                }
            }
        });
        let r = guard(wf.run_task("go", &ctx)).await.unwrap();
        assert_eq!(r.status, RunStatus::Cancelled, "reuse_actors({reuse})");
        assert_eq!(r.thread.len(), 1, "reuse_actors({reuse})");
        let thread: &Thread = &r.thread;
        assert!(thread.state().is_some(), "reuse_actors({reuse})");
    }
}

/// A participant's turn is dropped by its run when cancelled, so its
/// context says so; a context made from it for something else (a child,
/// another token) does not, and races its cancellation again.
#[tokio::test]
async fn a_turns_context_is_dropped_on_cancel_and_what_it_starts_is_not() {
    for reuse in [true, false] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        let wf = Workflow::builder()
            .participant(FnAgent::new("probe", move |_, ctx: RunContext| {
                let record = record.clone();
                async move {
                    let child = ctx.child("tool");
                    let other = ctx.with_cancellation(troupe_runtime::CancellationToken::new());
                    other.cancel();
                    child.cancel();
                    let flags = [
                        ctx.is_dropped_on_cancel(),
                        child.is_dropped_on_cancel(),
                        other.is_dropped_on_cancel(),
                        ctx.run_until_cancelled(async { 1 }).await.is_some(),
                        child.run_until_cancelled(async { 1 }).await.is_none(),
                        other.run_until_cancelled(async { 1 }).await.is_none(),
                    ];
                    record.lock().unwrap().extend(flags);
                    Ok::<_, AgentError>("done")
                }
            }))
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
        assert_eq!(r.final_text(), "done", "reuse_actors({reuse})");
        assert_eq!(
            *seen.lock().unwrap(),
            [true, false, false, true, true, true],
            "reuse_actors({reuse})"
        );
    }
    // Outside a run, a context races its cancellation.
    assert!(!RunContext::new().is_dropped_on_cancel());
}

/// A turn's time is measured only for a run whose events are listened to;
/// then a turn that waits reports how long it took, on shared or own actors.
#[tokio::test]
async fn a_listened_runs_turns_report_their_time() {
    for reuse in [true, false] {
        let wf = Workflow::builder()
            .participant(waiter("slow", 40))
            .reuse_actors(reuse)
            .build()
            .unwrap();
        let (ctx, mut events) = RunContext::stream();
        let r = guard(wf.run_task("go", &ctx)).await.unwrap();
        assert_eq!(r.final_text(), "slow", "reuse_actors({reuse})");
        let times: Vec<f64> = events
            .drain_ready()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::AgentFinished { elapsed_ms, .. } => Some(elapsed_ms),
                _ => None,
            })
            .collect();
        assert_eq!(times.len(), 1, "reuse_actors({reuse}): {times:?}");
        assert!(times[0] >= 35.0, "reuse_actors({reuse}): {times:?}");
    }
}
