//! The run thread a run hands back, put together from the slots it was
//! taken apart into: children by name, the input's own children kept, and
//! the spend per participant.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use troupe_runtime::{FnAgent, Message, Router, RunContext, Thread, Workflow};

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

/// `a`, `b` and `c` in turn, each adding its name to what it heard.
fn pipeline() -> Workflow {
    let step = |name: &'static str| {
        FnAgent::sync(name, move |t: &Thread| {
            Ok(format!("{}>{name}", last_text(t)))
        })
    };
    Workflow::builder()
        .name("pipe")
        .participant(step("a"))
        .participant(step("b"))
        .participant(step("c"))
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

/// The run thread's children come back in name order: every participant's
/// slot under its name (one given in the input thread carried on, not
/// replaced), and children that belong to no participant as they were; the
/// spend comes back per participant, in path order.
#[tokio::test]
async fn the_threads_children_and_the_spend_come_back_by_name_with_foreign_children_kept() {
    let mut input = Thread::from_messages([Message::user("x")]);
    let child = |text: &str| Thread::from_messages([Message::user(text)]);
    input.children_mut().insert("zzz".into(), child("kept z"));
    input.children_mut().insert("aaa".into(), child("kept a"));
    input.children_mut().insert("b".into(), child("b before"));
    let r = guard(pipeline().run(input, &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "x>a>b>c");
    let names: Vec<&str> = r.thread.children().keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "aaa", "b", "c", "zzz"]);
    let texts = |name: &str| -> Vec<String> {
        r.thread.children()[name]
            .messages()
            .iter()
            .map(|m| m.text_content().into_owned())
            .collect()
    };
    assert_eq!(texts("aaa"), ["kept a"]);
    assert_eq!(texts("zzz"), ["kept z"]);
    assert_eq!(texts("b"), ["b before", "x>a", "x>a>b"]);
    let spent: Vec<(&str, u64)> = r
        .stats
        .agents
        .iter()
        .map(|(path, s)| (path.as_str(), s.turns))
        .collect();
    assert_eq!(spent.len(), 3, "{spent:?}");
    assert!(
        spent.windows(2).all(|w| w[0].0 < w[1].0) && spent.iter().all(|(_, t)| *t == 1),
        "{spent:?}"
    );
}
