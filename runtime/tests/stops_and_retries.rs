//! Through a real run: the stop conditions AutoGen has and troupe lacked
//! (stop message, function call, text message by source), retries chosen
//! by the error's text, and a parallel block retried whole as a nested
//! workflow under a retry policy (seed 004: all or nothing).

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use troupe_runtime::{
    AgentError, Content, ErrorKind, Event, FnAgent, Graph, RetryPolicy, RunContext, RunStatus,
    StopCondition, Thread, Workflow, message::ToolCall,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

/// Two agents talking in turn (router-only), each saying what `say` gives
/// for its n-th turn.
async fn stop_reason(stop: StopCondition, say: fn(&str, usize) -> Content) -> String {
    let agent = |name: &'static str| {
        let n = Arc::new(AtomicU32::new(0));
        FnAgent::sync(name, move |_: &Thread| -> Result<Content, AgentError> {
            Ok(say(name, n.fetch_add(1, Ordering::SeqCst) as usize))
        })
    };
    let wf = Workflow::builder()
        .participant(agent("a"))
        .participant(agent("b"))
        .stop_condition(stop | StopCondition::max_turns(20))
        .build()
        .unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    match r.status {
        RunStatus::Stopped(reason) => reason.to_string(),
        other => panic!("not stopped: {other}"),
    }
}

#[tokio::test]
async fn a_run_stops_on_a_stop_message_a_function_call_and_a_text_message_from_a_source() {
    let r = stop_reason(StopCondition::stop_message(), |name, n| {
        if n == 1 {
            Content::Stop(format!("{name} is done"))
        } else {
            Content::Text("more".into())
        }
    })
    .await;
    assert!(r.starts_with("stop_message: '"), "{r}");
    assert!(r.contains("is done"), "{r}");

    let r = stop_reason(StopCondition::function_call("search"), |_, n| {
        if n == 2 {
            Content::ToolCalls(vec![ToolCall {
                id: "c1".into(),
                name: "search".into(),
                arguments: "{}".into(),
            }])
        } else {
            Content::Text("thinking".into())
        }
    })
    .await;
    assert!(r.starts_with("function_call(search): '"), "{r}");

    let r = stop_reason(StopCondition::text_message_from(["b"]), |name, _| {
        if name == "b" {
            Content::Text("hello".into())
        } else {
            Content::Structured("{}".into())
        }
    })
    .await;
    assert_eq!(r, "text_message(b): 'b' sent a text message");

    let parsed = StopCondition::parse("text_message(b) | max_turns(9)").unwrap();
    let r = stop_reason(parsed, |_, _| Content::Text("hi".into())).await;
    assert_eq!(r, "text_message(b): 'b' sent a text message");
}

/// An agent failing with `error` on its first `fails` calls.
fn flaky(name: &'static str, fails: u32, error: &'static str, calls: Arc<AtomicU32>) -> FnAgent {
    FnAgent::sync(name, move |_: &Thread| -> Result<String, AgentError> {
        if calls.fetch_add(1, Ordering::SeqCst) < fails {
            Err(AgentError::failed(error))
        } else {
            Ok(format!("{name} ok"))
        }
    })
}

#[tokio::test]
async fn a_retry_pattern_retries_a_failure_of_any_kind_whose_text_matches() {
    let calls = Arc::new(AtomicU32::new(0));
    let policy = RetryPolicy::fixed(3, Duration::ZERO)
        .on([ErrorKind::Timeout])
        .on_pattern("rate limit|429")
        .unwrap();
    let g = Graph::builder()
        .add_agent(flaky("api", 2, "HTTP 429: slow down", calls.clone()))
        .retry("api", policy.clone())
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(r.final_text(), "api ok");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // A text the pattern does not match, of a kind not listed: no retry.
    let calls = Arc::new(AtomicU32::new(0));
    let g = Graph::builder()
        .add_agent(flaky("api", 1, "bad request", calls.clone()))
        .retry("api", policy)
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let err = guard(wf.run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad request"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_parallel_block_as_a_nested_workflow_reruns_whole_under_its_retry_policy() {
    let steady = Arc::new(AtomicU32::new(0));
    let shaky = Arc::new(AtomicU32::new(0));
    let block = Graph::builder()
        .add_agent(flaky("steady", 0, "", steady.clone()))
        .add_agent(flaky("shaky", 1, "upstream 503", shaky.clone()))
        .build()
        .unwrap();
    let block = Workflow::builder()
        .name("block")
        .graph(block)
        .build()
        .unwrap();
    let g = Graph::builder()
        .add_agent(block)
        .add_agent(FnAgent::sync("after", |t: &Thread| {
            Ok::<_, AgentError>(format!("after {}", t.len()))
        }))
        .add_edge("block", "after")
        .retry("block", RetryPolicy::fixed(2, Duration::ZERO))
        .build()
        .unwrap();
    let wf = Workflow::builder().graph(g).build().unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("go", &ctx)).await.unwrap();
    assert!(r.final_text().starts_with("after"), "{}", r.final_text());
    // All or nothing: the step that had succeeded ran again with the other.
    assert_eq!(steady.load(Ordering::SeqCst), 2);
    assert_eq!(shaky.load(Ordering::SeqCst), 2);
    let retries: Vec<(String, u32)> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Retry { path, attempt, .. } => Some((path.to_string(), attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [("workflow/block".to_string(), 1)]);
}
