//! Router-only workflows: scheduling, failure, cancellation, nesting,
//! continuation and concurrency.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use troupe_runtime::{
    AgentError, Event, FnAgent, InboxConfig, Message, Router, RunContext, RunError, RunStatus,
    StopCondition, Thread, Workflow, stop::StopHandle,
};

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the run hung")
}

fn pipeline() -> Workflow {
    Workflow::builder()
        .name("pipe")
        .participant(FnAgent::sync("a", |t: &Thread| {
            Ok(format!("{}>a", last_text(t)))
        }))
        .participant(FnAgent::sync("b", |t: &Thread| {
            Ok(format!("{}>b", last_text(t)))
        }))
        .participant(FnAgent::sync("c", |t: &Thread| {
            Ok(format!("{}>c", last_text(t)))
        }))
        .router(
            Router::builder()
                .add_route("user", "a")
                .add_route("a", "b")
                .add_route("b", "c")
                .output("c"),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_pipeline_runs_to_quiescence() {
    let r = guard(pipeline().run_task("x", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.final_text(), "x>a>b>c");
    assert_eq!(r.turns, 3);
    let texts: Vec<_> = r
        .thread
        .messages()
        .iter()
        .map(|m| format!("{}:{}", m.source, m.text_content()))
        .collect();
    assert_eq!(texts, ["user:x", "a:x>a", "b:x>a>b", "c:x>a>b>c"]);
    // Private threads: b saw a's message and its own, never the user's.
    let b = r.thread.child("b").unwrap();
    let b_sources: Vec<_> = b.messages().iter().map(|m| m.source.to_string()).collect();
    assert_eq!(b_sources, ["a", "b"]);
}

#[tokio::test]
async fn batches_wait_for_a_full_batch_then_flush_at_quiescence() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let collector = FnAgent::sync("collect", move |t: &Thread| {
        log.lock().unwrap().push(t.len());
        Ok(())
    });
    let wf = Workflow::builder()
        .participant(collector)
        .router(
            Router::builder()
                .add_route_with("user", "collect", InboxConfig::new().batch_size(3))
                .output("collect"),
        )
        .build()
        .unwrap();
    let input: Vec<Message> = (0..7).map(|i| Message::user(format!("m{i}"))).collect();
    let r = guard(wf.run(Thread::from_messages(input), &RunContext::new()))
        .await
        .unwrap();
    // Two full batches of 3, then the last one flushed when nothing else could run.
    assert_eq!(*seen.lock().unwrap(), [3, 6, 7]);
    assert_eq!(r.turns, 3);
    assert!(r.thread.state().unwrap().pending.is_empty());
}

#[tokio::test]
async fn expired_messages_are_dropped_and_reported() {
    let (ctx, mut events) = RunContext::stream();
    let wf = Workflow::builder()
        .participant(FnAgent::sync("late", |t: &Thread| {
            Ok(format!("saw {}", t.len()))
        }))
        .router(
            Router::builder()
                .add_route_with(
                    "user",
                    "late",
                    InboxConfig::new().ttl(Duration::from_secs(60)),
                )
                .output("late"),
        )
        .build()
        .unwrap();
    let mut old = Message::user("stale");
    old.created_at -= Duration::from_secs(3600);
    let r = guard(wf.run(Thread::from_messages([old, Message::user("fresh")]), &ctx))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "saw 1"); // only the fresh message reached it
    let dropped: Vec<_> = events
        .drain_ready()
        .into_iter()
        .filter(|e| matches!(&e.event, Event::MessageDropped { .. }))
        .collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
}

#[tokio::test]
async fn a_panicking_agent_fails_the_run_naming_it_and_keeps_the_thread() {
    let wf = Workflow::builder()
        .name("team")
        .participant(FnAgent::sync("fine", |_: &Thread| Ok("first")))
        .participant(FnAgent::sync(
            "boom",
            |_: &Thread| -> Result<String, AgentError> { panic!("kaboom") },
        ))
        .router(
            Router::builder()
                .add_route("user", "fine")
                .add_route("fine", "boom")
                .output("boom"),
        )
        .build()
        .unwrap();
    let err = guard(wf.run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
    assert_eq!(err.agent(), Some("team/boom"));
    assert!(err.to_string().contains("team/boom"), "{err}");
    assert!(err.to_string().contains("kaboom"), "{err}");
    let thread = err.into_thread().unwrap();
    let texts: Vec<_> = thread
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(texts, ["go", "first"]);
}

#[tokio::test]
async fn an_agent_error_fails_the_run_naming_it() {
    let wf = Workflow::builder()
        .name("team")
        .participant(FnAgent::sync(
            "bad",
            |_: &Thread| -> Result<String, AgentError> { Err(AgentError::failed("no such file")) },
        ))
        .build()
        .unwrap();
    let err = guard(wf.run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "agent 'team/bad' failed: no such file");
    assert_eq!(err.thread().unwrap().len(), 1);
}

#[tokio::test]
async fn cancelling_during_a_long_turn_returns_promptly() {
    let wf = Workflow::builder()
        .participant(FnAgent::sync("quick", |_: &Thread| Ok("done quickly")))
        .participant(FnAgent::new("sleeper", |_, _| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok::<_, AgentError>("woke")
        }))
        .router(
            Router::builder()
                .add_route("user", "quick")
                .add_route("quick", "sleeper")
                .output("sleeper"),
        )
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let canceller = ctx.clone();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            if matches!(&e.event, Event::AgentStarted { path, .. } if path.ends_with("sleeper")) {
                canceller.cancel();
            }
        }
    });
    let started = std::time::Instant::now();
    let r = guard(wf.run_task("go", &ctx)).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, RunStatus::Cancelled);
    // Consistent: the completed turn is there, the cancelled one left nothing.
    let texts: Vec<_> = r
        .thread
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(texts, ["go", "done quickly"]);
    assert_eq!(r.thread.child("sleeper").unwrap().len(), 1);
}

#[tokio::test]
async fn a_timeout_fires_during_a_long_turn() {
    let wf = Workflow::builder()
        .participant(FnAgent::new("sleeper", |_, _| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, AgentError>("woke")
        }))
        .stop_condition(StopCondition::timeout(Duration::from_millis(100)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    match r.status {
        RunStatus::Stopped(reason) => assert_eq!(reason.condition, "timeout(100ms)"),
        other => panic!("{other:?}"),
    }
}

fn ping_pong(stop: StopCondition) -> Workflow {
    let counter = Arc::new(AtomicUsize::new(0));
    let c2 = counter.clone();
    Workflow::builder()
        .name("rally")
        .participant(FnAgent::sync("ping", move |_: &Thread| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            Ok(format!("ping {n}"))
        }))
        .participant(FnAgent::sync("pong", move |_: &Thread| {
            let n = c2.fetch_add(1, Ordering::SeqCst);
            if n >= 5 {
                Ok(Message::handoff("", "user", "your turn"))
            } else {
                Ok(Message::text("", format!("pong {n} DONE?")))
            }
        }))
        .router(
            Router::builder()
                .add_route("user", "ping")
                .add_route("ping", "pong")
                .add_route("pong", "ping"),
        )
        .stop_condition(stop)
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_stop_condition_stops_where_expected() {
    let ctx = RunContext::new();
    let r = guard(ping_pong(StopCondition::max_messages(4)).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(r.thread.len(), 4);

    let r = guard(ping_pong(StopCondition::text_mention("DONE?")).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "pong 1 DONE?");

    let r = guard(ping_pong(StopCondition::source_match(["pong"])).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(&*r.final_response.unwrap().source, "pong");

    let r = guard(ping_pong(StopCondition::handoff("user")).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(r.final_response.unwrap().handoff_target(), Some("user"));

    let r = guard(ping_pong(StopCondition::max_turns(3)).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(r.turns, 3);

    let r = guard(
        ping_pong(StopCondition::max_turns(100) | StopCondition::max_messages(3))
            .run_task("go", &ctx),
    )
    .await
    .unwrap();
    match r.status {
        RunStatus::Stopped(reason) => assert_eq!(reason.condition, "max_messages(3)"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_external_stop_ends_the_run() {
    let handle = StopHandle::new();
    let wf = Workflow::builder()
        .participant(FnAgent::new("slowpoke", |_, _| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<_, AgentError>("tick")
        }))
        .participant(FnAgent::sync("echo", |_: &Thread| Ok("tock")))
        .stop_condition(StopCondition::external(&handle))
        .build()
        .unwrap();
    let h = handle.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.stop();
    });
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    match r.status {
        RunStatus::Stopped(reason) => assert_eq!(reason.condition, "external"),
        other => panic!("{other:?}"),
    }
    assert!(r.turns >= 2);
}

#[tokio::test]
async fn token_budget_counts_usage() {
    let wf = Workflow::builder()
        .participant(FnAgent::sync("spender", |_: &Thread| {
            Ok(
                Message::text("", "costly").with_usage(troupe_runtime::message::Usage {
                    prompt_tokens: 40,
                    completion_tokens: 10,
                }),
            )
        }))
        .participant(FnAgent::sync("other", |_: &Thread| Ok("free")))
        .stop_condition(StopCondition::token_budget(120))
        .build()
        .unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.usage.total(), 150);
    assert!(matches!(r.status, RunStatus::Stopped(_)));
}

#[tokio::test]
async fn running_again_continues_the_conversation() {
    let wf = Workflow::builder()
        .name("counter")
        .participant(FnAgent::sync("count", |t: &Thread| {
            Ok(format!("I have seen {} messages", t.len()))
        }))
        .build()
        .unwrap();
    let ctx = RunContext::new();
    let first = guard(wf.run_task("one", &ctx)).await.unwrap();
    assert_eq!(first.final_text(), "I have seen 1 messages");
    let mut thread = first.thread;
    thread.push(Message::user("two"));
    let second = guard(wf.run(thread, &ctx)).await.unwrap();
    // Its own thread kept the first exchange: user, reply, user.
    assert_eq!(second.final_text(), "I have seen 3 messages");
    assert_eq!(second.thread.len(), 4);
    assert_eq!(second.turns, 1);
}

#[tokio::test]
async fn a_shared_thread_receives_each_message_once() {
    let wf = Workflow::builder()
        .participant(FnAgent::sync("a", |_: &Thread| Ok("from a")))
        .participant(FnAgent::sync("b", |t: &Thread| {
            Ok(format!("b saw {}", t.len()))
        }))
        .participant(FnAgent::sync("c", |t: &Thread| {
            Ok(format!("c saw {}", t.len()))
        }))
        .router(
            Router::builder()
                .add_route("user", "a")
                .add_route("a", ["b", "c"].as_slice().to_vec().join(",").as_str())
                .add_route("a", "c")
                .add_route("a", "b")
                .output("b")
                .output("c"),
        )
        .shared_thread("bc", ["b", "c"])
        .build();
    // The odd route above names an unknown agent "b,c": the build must say so.
    let err = wf.unwrap_err().to_string();
    assert!(err.contains("b,c"), "{err}");

    let wf = Workflow::builder()
        .participant(FnAgent::sync("a", |_: &Thread| Ok("from a")))
        .participant(FnAgent::sync("b", |_: &Thread| Ok("from b")))
        .participant(FnAgent::sync("c", |_: &Thread| Ok("from c")))
        .router(
            Router::builder()
                .add_route("user", "a")
                .add_route("a", "b")
                .add_route("a", "c")
                .output("b")
                .output("c"),
        )
        .shared_thread("bc", ["b", "c"])
        .build()
        .unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    let shared = r.thread.child("bc").unwrap();
    let from_a = shared
        .messages()
        .iter()
        .filter(|m| &*m.source == "a")
        .count();
    assert_eq!(
        from_a, 1,
        "a's message reached b and c but enters their shared thread once"
    );
    assert_eq!(shared.len(), 3);
    assert!(r.thread.child("b").is_none());
}

fn nested(depth: usize) -> Workflow {
    let leaf = FnAgent::sync(format!("worker{depth}"), |t: &Thread| {
        Ok(format!("{}+", last_text(t)))
    });
    let b = Workflow::builder().name(format!("level{depth}"));
    if depth == 0 {
        b.participant(leaf).build().unwrap()
    } else {
        b.participant(nested(depth - 1))
            .participant(leaf)
            .router(
                Router::builder()
                    .add_route("user", format!("level{}", depth - 1))
                    .add_route(format!("level{}", depth - 1), format!("worker{depth}"))
                    .output(format!("worker{depth}")),
            )
            .build()
            .unwrap()
    }
}

#[tokio::test]
async fn workflows_nest_three_levels_with_paths_in_events() {
    let wf = nested(2); // level2 > level1 > level0 > worker0
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("x", &ctx)).await.unwrap();
    assert_eq!(r.final_text(), "x+++");
    let paths: Vec<String> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::AgentStarted { path, .. } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        paths.contains(&"level2/level1/level0/worker0".to_string()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"level2/level1/worker1".to_string()),
        "{paths:?}"
    );
    // The inner state lives in the outer thread: level1's child holds level0's.
    let l1 = r.thread.child("level1").unwrap();
    assert!(l1.child("level0").unwrap().child("worker0").is_some());

    // And a second run continues every level from that state.
    let mut t = r.thread;
    t.push(Message::user("y"));
    let again = guard(wf.run(t, &RunContext::new())).await.unwrap();
    assert_eq!(again.final_text(), "y+++");
    let w0 = again
        .thread
        .child("level1")
        .unwrap()
        .child("level0")
        .unwrap()
        .child("worker0")
        .unwrap();
    assert_eq!(w0.len(), 4, "x, x+, y, y+");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_workflow_serves_a_hundred_concurrent_runs() {
    let wf = pipeline();
    let runs = (0..100).map(|i| {
        let wf = wf.clone();
        tokio::spawn(async move { wf.run_task(format!("r{i}"), &RunContext::new()).await })
    });
    let results = guard(futures::future::join_all(runs)).await;
    for (i, r) in results.into_iter().enumerate() {
        let r = r.unwrap().unwrap();
        assert_eq!(r.final_text(), format!("r{i}>a>b>c"));
        assert_eq!(r.thread.len(), 4);
    }
}

#[tokio::test]
async fn run_stream_yields_events_live_and_the_result() {
    let mut stream = pipeline().run_stream(
        Thread::from_messages([Message::user("s")]),
        &RunContext::new(),
    );
    let mut kinds = Vec::new();
    while let Some(e) = guard(stream.next()).await {
        kinds.push(match e.event {
            Event::RunStarted { .. } => "start",
            Event::RunFinished { .. } => "finish",
            Event::MessageProduced { .. } => "produced",
            _ => continue,
        });
    }
    assert_eq!(
        kinds,
        ["start", "produced", "produced", "produced", "finish"]
    );
    assert_eq!(stream.result().await.unwrap().final_text(), "s>a>b>c");
}

#[tokio::test]
async fn build_errors_name_the_problem() {
    let e = Workflow::builder().name("empty").build().unwrap_err();
    assert_eq!(e.to_string(), "workflow 'empty' has no participants");
    let e = Workflow::builder()
        .participant(FnAgent::sync("a", |_: &Thread| Ok("")))
        .participant(FnAgent::sync("a", |_: &Thread| Ok("")))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("'a'"), "{e}");
    let e = Workflow::builder()
        .participant(FnAgent::sync("a", |_: &Thread| Ok("")))
        .shared_thread("g", ["a", "ghost"])
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("ghost"), "{e}");
}

/// A workflow whose second agent panics on the turns `fail_on` says.
fn flaky(fail_on: Arc<AtomicUsize>) -> Workflow {
    Workflow::builder()
        .name("kept")
        .participant(FnAgent::sync("first", |_: &Thread| Ok("ready")))
        .participant(FnAgent::sync(
            "second",
            move |_: &Thread| -> Result<String, AgentError> {
                if fail_on.fetch_sub(1, Ordering::SeqCst) == 1 {
                    panic!("second run breaks");
                }
                Ok("done".into())
            },
        ))
        .router(
            Router::builder()
                .add_route("user", "first")
                .add_route("first", "second")
                .output("second"),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn runs_of_one_workflow_reuse_actors_and_a_panic_on_a_kept_actor_still_fails_the_run() {
    // The second agent panics on its second turn: in the second run, on
    // the actor the first run handed on.
    let fail_on = Arc::new(AtomicUsize::new(2));
    let wf = flaky(fail_on.clone());
    let first = guard(wf.run_task("one", &RunContext::new())).await.unwrap();
    assert_eq!(first.final_text(), "done");
    let err = guard(wf.run_task("two", &RunContext::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
    assert_eq!(err.agent(), Some("kept/second"));
    // The failed run kept nothing broken: the next run works.
    let third = guard(wf.run_task("three", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(third.final_text(), "done");
    // Concurrent runs share one actor per participant.
    let runs = (0..8).map(|i| {
        let wf = wf.clone();
        async move { wf.run_task(format!("run {i}"), &RunContext::new()).await }
    });
    for result in guard(futures::future::join_all(runs)).await {
        assert_eq!(result.unwrap().final_text(), "done");
    }
}

#[test]
fn a_workflow_outlives_the_runtime_its_kept_actors_ran_on() {
    let wf = flaky(Arc::new(AtomicUsize::new(0)));
    for _ in 0..2 {
        // Each runtime's shutdown kills the actors the last run kept; the
        // next runtime's run spawns fresh ones instead of failing.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = rt.block_on(guard(wf.run_task("go", &RunContext::new())));
        assert_eq!(result.unwrap().final_text(), "done");
    }
    let wf = Workflow::builder()
        .name("fresh")
        .participant(FnAgent::sync("only", |_: &Thread| Ok("ok")))
        .reuse_actors(false)
        .build()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for _ in 0..2 {
        let result = rt.block_on(wf.run_task("go", &RunContext::new())).unwrap();
        assert_eq!(result.final_text(), "ok");
    }
}
