//! The run thread a run hands back, put together from the slots it was
//! taken apart into: children by name, the input's own children kept, and
//! the spend per participant.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::guard;
use troupe_runtime::{FnAgent, Graph, Message, RunContext, Thread, Workflow};

/// A graph of `a`, `b` and `c` in a row, each adding its name to what it
/// heard.
fn pipeline() -> Workflow {
    let step = |name: &'static str| {
        FnAgent::sync(name, move |t: &Thread| {
            let heard = t.last().map(|m| m.text_content().into_owned());
            Ok(format!("{}>{name}", heard.unwrap_or_default()))
        })
    };
    let graph = Graph::builder()
        .add_agent(step("a"))
        .add_agent(step("b"))
        .add_agent(step("c"))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .build()
        .unwrap();
    Workflow::builder()
        .name("pipe")
        .graph(graph)
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
    input
        .children_mut()
        .insert("zzz".into(), Box::new(child("kept z")));
    input
        .children_mut()
        .insert("aaa".into(), Box::new(child("kept a")));
    input
        .children_mut()
        .insert("b".into(), Box::new(child("b before")));
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
