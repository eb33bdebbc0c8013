//! Graph workflows: the scenarios of seed 004 (sequential, conditional
//! branch and loop, parallel, nested parallel, loop limit, retry, parallel
//! failure), joins, schedulers and validation.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe_runtime::{
    AgentError, ErrorKind, Event, FnAgent, Graph, Message, RetryPolicy, RunContext, RunError,
    RunStatus, StopCondition, Thread, Workflow, event::EventRecord, graph::Condition,
    graph::Isolation, graph::Join, graph::NodeInput, graph::Scheduler,
};

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// A node that appends its name to what it received.
fn step(name: &'static str) -> FnAgent {
    FnAgent::sync(name, move |t: &Thread| {
        Ok(format!("{}>{name}", last_text(t)))
    })
}

/// A node that sleeps, then says its name.
fn sleeper(name: &'static str, ms: u64) -> FnAgent {
    FnAgent::new(name, move |_, _| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, AgentError>(name)
    })
}

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

fn order_of(events: &[EventRecord]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::AgentStarted { path, .. } => Some(path.rsplit('/').next().unwrap_or("").into()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn sequential_steps_pass_their_output_on() {
    let g = Graph::builder()
        .add_agent(step("generator"))
        .add_agent(step("translator"))
        .add_agent(step("publisher"))
        .add_edge("generator", "translator")
        .add_edge("translator", "publisher")
        .build()
        .unwrap();
    let wf = Workflow::builder().name("seq").graph(g).build().unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("draft", &ctx)).await.unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.final_text(), "draft>generator>translator>publisher");
    let events = events.drain_ready();
    assert_eq!(order_of(&events), ["generator", "translator", "publisher"]);
    let supersteps = events
        .iter()
        .filter(|e| matches!(&e.event, Event::SuperstepCompleted { .. }))
        .count();
    assert_eq!(supersteps, 3);
}

/// The QA loop of seed 004: qa rejects twice, then approves.
fn qa_loop(limit: Option<u32>, rejections: u32) -> Workflow {
    let seen = Arc::new(AtomicU32::new(0));
    let qa = FnAgent::sync("qa", move |_: &Thread| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        Ok(if n < rejections {
            "REJECT: try again"
        } else {
            "APPROVE"
        })
    });
    let mut g = Graph::builder()
        .add_agent(step("generator"))
        .add_agent(step("translator"))
        .add_agent(qa)
        .add_agent(step("publisher"))
        .add_edge("generator", "translator")
        .add_edge("translator", "qa")
        .add_transition("qa", "publisher", Condition::text_contains("APPROVE"));
    g = match limit {
        Some(l) => g.add_loop_with_limit("qa", "translator", Condition::text_contains("REJECT"), l),
        None => g.add_loop("qa", "translator", Condition::text_contains("REJECT")),
    };
    Workflow::builder()
        .name("qa")
        .graph(g.build().unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_conditional_branch_loops_back_until_approved() {
    let (ctx, mut events) = RunContext::stream();
    let r = guard(qa_loop(None, 2).run_task("text", &ctx))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "APPROVE>publisher");
    assert_eq!(
        order_of(&events.drain_ready()),
        [
            "generator",
            "translator",
            "qa",
            "translator",
            "qa",
            "translator",
            "qa",
            "publisher"
        ]
    );
}

#[tokio::test]
async fn exceeding_the_loop_limit_fails_with_a_clear_error() {
    let err = guard(qa_loop(Some(3), 100).run_task("text", &RunContext::new()))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "max loop iterations exceeded (step: translator, limit: 3)"
    );
    assert!(matches!(err, RunError::LoopLimit { .. }));
    // The thread up to the failure is kept: 3 rounds of rejection at least.
    assert!(err.thread().unwrap().len() >= 8);
}

#[tokio::test]
async fn a_fan_in_inside_a_loop_collects_on_every_iteration() {
    let rounds = Arc::new(AtomicU32::new(0));
    let r2 = rounds.clone();
    let joined = Arc::new(Mutex::new(Vec::new()));
    let log = joined.clone();
    let g = Graph::builder()
        .add_agent(step("split"))
        .add_agent(step("left"))
        .add_agent(step("right"))
        .add_agent(FnAgent::sync("join", move |t: &Thread| {
            let n = r2.fetch_add(1, Ordering::SeqCst);
            log.lock().unwrap().push(t.len());
            Ok(if n == 0 { "again" } else { "enough" })
        }))
        .add_edge("split", "left")
        .add_edge("split", "right")
        .add_edge("left", "join")
        .add_edge("right", "join")
        .add_loop("join", "split", Condition::text_contains("again"))
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "enough");
    assert_eq!(
        rounds.load(Ordering::SeqCst),
        2,
        "join ran once per iteration"
    );
    // Each time join received both branches: 2 messages, then 2 more + its reply.
    assert_eq!(*joined.lock().unwrap(), [2, 5]);
}

#[tokio::test(start_paused = true)]
async fn a_fan_out_runs_its_branches_in_parallel() {
    let g = Graph::builder()
        .add_agent(step("plan"))
        .add_agent(sleeper("a", 200))
        .add_agent(sleeper("b", 200))
        .add_agent(sleeper("c", 200))
        .add_agent(step("merge"))
        .add_edge("plan", "a")
        .add_edge("plan", "b")
        .add_edge("plan", "c")
        .add_edge("a", "merge")
        .add_edge("b", "merge")
        .add_edge("c", "merge")
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let started = tokio::time::Instant::now();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(400), "{elapsed:?}");
    // merge saw all three branches.
    assert_eq!(r.thread.child("merge").unwrap().len(), 4);
}

fn uneven_branches(scheduler: Scheduler) -> Workflow {
    let g = Graph::builder()
        .add_agent(step("start"))
        .add_agent(sleeper("short", 50))
        .add_agent(sleeper("long", 400))
        .add_agent(step("after_short"))
        .add_agent(step("after_long"))
        .add_edge("start", "short")
        .add_edge("start", "long")
        .add_edge("short", "after_short")
        .add_edge("long", "after_long")
        .scheduler(scheduler)
        .build()
        .unwrap();
    Workflow::builder().graph(g).build().unwrap()
}

/// When each node started and finished, in paused-clock milliseconds.
async fn timeline(wf: Workflow) -> Vec<(String, &'static str, u128)> {
    let start = tokio::time::Instant::now();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l2 = log.clone();
    let ctx = RunContext::with_sink(troupe_runtime::sink::EventSink::callback(move |e| {
        let at = start.elapsed().as_millis();
        match &e.event {
            Event::AgentStarted { path, .. } => {
                l2.lock()
                    .unwrap()
                    .push((path.rsplit('/').next().unwrap().to_string(), "start", at))
            }
            Event::AgentFinished { path, .. } => {
                l2.lock()
                    .unwrap()
                    .push((path.rsplit('/').next().unwrap().to_string(), "end", at))
            }
            _ => {}
        }
    }));
    guard(wf.run_task("go", &ctx)).await.unwrap();

    log.lock().unwrap().clone()
}

fn at(t: &[(String, &str, u128)], node: &str, what: &str) -> u128 {
    t.iter()
        .find(|(n, w, _)| n == node && *w == what)
        .map(|x| x.2)
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn dataflow_starts_a_successor_without_waiting_for_siblings() {
    let t = timeline(uneven_branches(Scheduler::Dataflow)).await;
    assert!(
        at(&t, "after_short", "start") < at(&t, "long", "end"),
        "{t:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn supersteps_wait_at_the_barrier() {
    let t = timeline(uneven_branches(Scheduler::Supersteps)).await;
    assert!(
        at(&t, "after_short", "start") >= at(&t, "long", "end"),
        "{t:?}"
    );
}

fn diamond(join: Join, left_condition: Condition) -> Workflow {
    let g = Graph::builder()
        .add_agent(FnAgent::sync("route", |_: &Thread| Ok("right only")))
        .add_agent(step("left"))
        .add_agent(step("right"))
        .add_agent(FnAgent::sync("join", |t: &Thread| {
            Ok(format!("joined {}", t.len()))
        }))
        .add_transition("route", "left", left_condition)
        .add_transition("route", "right", Condition::text_contains("right"))
        .add_edge("left", "join")
        .add_edge("right", "join")
        .join("join", join)
        .build()
        .unwrap();
    Workflow::builder().graph(g).build().unwrap()
}

#[tokio::test]
async fn all_that_can_arrive_does_not_wait_for_a_branch_not_taken() {
    let r = guard(
        diamond(Join::AllThatCanArrive, Condition::text_contains("left"))
            .run_task("go", &RunContext::new()),
    )
    .await
    .unwrap();
    assert_eq!(r.final_text(), "joined 1");
    // With `All`, the branch not taken means the join never runs.
    let r = guard(
        diamond(Join::All, Condition::text_contains("left")).run_task("go", &RunContext::new()),
    )
    .await
    .unwrap();
    assert_eq!(r.final_text(), "right only>right");
}

#[tokio::test]
async fn parallel_branches_inherit_or_start_fresh() {
    let build = |iso: Isolation| {
        let g = Graph::builder()
            .add_agent(step("parent"))
            .add_agent(FnAgent::sync("child", |t: &Thread| {
                Ok(format!("child saw {}", t.len()))
            }))
            .add_edge("parent", "child")
            .fan_out("parent", iso)
            .build()
            .unwrap();
        Workflow::builder().graph(g).build().unwrap()
    };
    let fresh = guard(build(Isolation::Fresh).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(fresh.final_text(), "child saw 1");
    let inherit = guard(build(Isolation::Inherit).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(
        inherit.final_text(),
        "child saw 2",
        "the parent's input and its reply"
    );
}

#[tokio::test]
async fn nested_parallel_blocks_feed_one_aggregator_with_prior_outputs() {
    // outer parallel: generator ∥ (inner parallel: researcher ∥ summarizer) → publisher
    let inner = Workflow::builder()
        .name("inner")
        .graph(
            Graph::builder()
                .add_agent(step("researcher"))
                .add_agent(step("summarizer"))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    let g = Graph::builder()
        .add_agent(step("fork"))
        .add_agent(step("generator"))
        .add_agent(inner)
        .add_agent(FnAgent::sync("publisher", move |t: &Thread| {
            *s2.lock().unwrap() = last_text(t);
            Ok("published")
        }))
        .add_edge("fork", "generator")
        .add_edge("fork", "inner")
        .add_edge("generator", "publisher")
        .add_edge("inner", "publisher")
        .input("publisher", NodeInput::PriorOutputs)
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "published");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.starts_with("--- Prior Step Outputs ---"), "{seen}");
    assert!(
        seen.contains("[generator (agent: generator)]:\ngo>fork>generator"),
        "{seen}"
    );
    assert!(seen.contains("[inner (agent: inner)]:"), "{seen}");
    // inner's two parallel starts both ran; its final response is one of theirs.
    let inner_thread = r.thread.child("inner").unwrap();
    assert!(
        inner_thread.child("researcher").is_some() && inner_thread.child("summarizer").is_some()
    );
}

#[tokio::test]
async fn attachments_carry_id_description_and_content() {
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    let g = Graph::builder()
        .add_agent(step("a").with_description("finds facts"))
        .add_agent(FnAgent::sync("b", move |t: &Thread| {
            *s2.lock().unwrap() = last_text(t);
            Ok("ok")
        }))
        .add_edge("a", "b")
        .input("b", NodeInput::Attachments)
        .build()
        .unwrap();
    guard(
        Workflow::builder()
            .graph(g)
            .build()
            .unwrap()
            .run_task("q", &RunContext::new()),
    )
    .await
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        "<attachment id=\"a\" description=\"finds facts\">\nq>a\n</attachment>"
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_succeeds_after_two_transient_failures_invisibly() {
    let calls = Arc::new(AtomicU32::new(0));
    let c2 = calls.clone();
    let flaky = FnAgent::sync("flaky", move |t: &Thread| {
        if c2.fetch_add(1, Ordering::SeqCst) < 2 {
            Err(AgentError::transient("rate limited"))
        } else {
            Ok(format!("{}>flaky", last_text(t)))
        }
    });
    let g = Graph::builder()
        .add_agent(step("first"))
        .add_agent(flaky)
        .add_agent(step("last"))
        .add_edge("first", "flaky")
        .add_edge("flaky", "last")
        .retry(
            "flaky",
            RetryPolicy::exponential(3, "100ms", "1s")
                .unwrap()
                .on([ErrorKind::Transient]),
        )
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("go", &ctx)).await.unwrap();
    assert_eq!(r.final_text(), "go>first>flaky>last");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let retries: Vec<_> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Retry {
                attempt, delay_ms, ..
            } => Some((attempt, delay_ms as u64)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(1, 100), (2, 200)]);
    // Downstream saw one message from flaky, as if it never failed.
    assert_eq!(r.thread.child("last").unwrap().len(), 2);
}

#[tokio::test]
async fn a_retry_policy_gives_up_on_other_kinds_and_after_max_attempts() {
    let g = Graph::builder()
        .add_agent(FnAgent::sync(
            "broken",
            |_: &Thread| -> Result<String, AgentError> { Err(AgentError::failed("bad input")) },
        ))
        .retry(
            "broken",
            RetryPolicy::fixed(5, Duration::from_millis(1)).on([ErrorKind::Transient]),
        )
        .build()
        .unwrap();
    let err = guard(
        Workflow::builder()
            .graph(g)
            .build()
            .unwrap()
            .run_task("go", &RunContext::new()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "agent 'workflow/broken' failed: bad input");
}

#[tokio::test]
async fn a_panic_is_retried_under_a_policy_for_every_kind_and_fails_as_a_panic_after() {
    // Panics on its first call only.
    let calls = Arc::new(AtomicU32::new(0));
    let c2 = calls.clone();
    let shaky = FnAgent::sync("shaky", move |t: &Thread| -> Result<String, AgentError> {
        if c2.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("first call breaks");
        }
        Ok(format!("{}>shaky", last_text(t)))
    });
    let g = Graph::builder()
        .add_agent(step("first"))
        .add_agent(shaky)
        .add_edge("first", "shaky")
        .retry("shaky", RetryPolicy::fixed(2, Duration::ZERO))
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "go>first>shaky");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // With no attempt left, the panic is what fails the run.
    let g = Graph::builder()
        .add_agent(FnAgent::sync(
            "broken",
            |_: &Thread| -> Result<String, AgentError> { panic!("always breaks") },
        ))
        .retry("broken", RetryPolicy::fixed(2, Duration::ZERO))
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let err = guard(wf.run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::AgentPanicked { .. }), "{err}");
    assert!(err.to_string().contains("always breaks"), "{err}");
}

#[tokio::test]
async fn a_failure_in_a_parallel_block_fails_the_run_keeping_the_last_superstep() {
    let g = Graph::builder()
        .add_agent(step("start"))
        .add_agent(sleeper("ok", 10))
        .add_agent(FnAgent::sync(
            "bad",
            |_: &Thread| -> Result<String, AgentError> { Err(AgentError::failed("disk full")) },
        ))
        .add_agent(step("never"))
        .add_edge("start", "ok")
        .add_edge("start", "bad")
        .add_edge("ok", "never")
        .add_edge("bad", "never")
        .build()
        .unwrap();
    let err = guard(
        Workflow::builder()
            .name("par")
            .graph(g)
            .build()
            .unwrap()
            .run_task("go", &RunContext::new()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.agent(), Some("par/bad"));
    let thread = err.into_thread().unwrap();
    // Up to the last completed superstep: the input and start's reply; not ok's.
    let sources: Vec<_> = thread
        .messages()
        .iter()
        .map(|m| m.source.to_string())
        .collect();
    assert_eq!(sources, ["user", "start"]);
}

#[tokio::test]
async fn a_ring_needs_a_stop_condition_and_resumes_with_the_next_node() {
    let ring = || {
        Graph::builder()
            .add_agent(step("a"))
            .add_agent(step("b"))
            .add_agent(step("c"))
            .add_edge("a", "b")
            .add_edge("b", "c")
            .add_edge("c", "a")
            .start("a")
            .build()
            .unwrap()
    };
    let err = Workflow::builder().graph(ring()).build().unwrap_err();
    assert!(err.to_string().contains("a -> b -> c"), "{err}");
    assert!(err.to_string().contains("no conditional exit"), "{err}");

    let wf = Workflow::builder()
        .graph(ring())
        .stop_condition(StopCondition::max_turns(4))
        .build()
        .unwrap();
    let r = guard(wf.run_task("x", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "x>a>b>c>a");
    let mut t = r.thread;
    t.push(Message::user("y"));
    let r = guard(wf.run(t, &RunContext::new())).await.unwrap();
    // b is next; it receives the new input (edge delivery to the next node).
    assert_eq!(r.messages.first().unwrap().source.as_ref(), "b");
}

#[test]
fn validation_errors_name_the_nodes() {
    let e = Graph::builder()
        .add_agent(step("a"))
        .add_edge("a", "ghost")
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid graph: unknown agent 'ghost' in transition a -> ghost"
    );

    let e = Graph::builder()
        .add_agent(step("a"))
        .add_agent(step("b"))
        .add_edge("a", "b")
        .add_edge("b", "a")
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("no start node"), "{e}");

    let e = Graph::builder()
        .add_agent(step("a"))
        .add_agent(step("b"))
        .add_agent(step("island"))
        .add_edge("a", "b")
        .add_edge("island", "island")
        .start("a")
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains("node 'island' is unreachable"),
        "{e}"
    );

    let e = Graph::builder()
        .add_agent(step("a"))
        .add_agent(step("b"))
        .add_agent(step("c"))
        .add_edge("a", "b")
        .add_transition("a", "c", Condition::text_contains("x"))
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains(
            "node 'a' mixes unconditional transitions (to b) with conditional ones (to c)"
        ),
        "{e}"
    );

    let e = Graph::builder()
        .add_agent(step("a"))
        .add_agent(step("a"))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("two nodes are named 'a'"), "{e}");

    // Several problems are reported at once.
    let e = Graph::builder()
        .add_agent(step("a"))
        .add_edge("a", "x")
        .add_edge("y", "a")
        .retry("z", RetryPolicy::fixed(2, Duration::ZERO))
        .build()
        .unwrap_err();
    assert_eq!(e.problems.len(), 3, "{e}");
}
