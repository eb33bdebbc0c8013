//! Graphs far longer than a hand-written team — a plan written by a model, a
//! generated YAML file — build on the default test thread's stack: every
//! graph walk of the builder is iterative.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use troupe_runtime::{FnAgent, Graph, Thread, Workflow, graph::Condition};

const N: usize = 100_000;

fn chain(n: usize) -> troupe_runtime::graph::GraphBuilder {
    let mut builder = Graph::builder();
    for i in 0..n {
        builder = builder.add_agent(FnAgent::sync(format!("s{i}"), |_: &Thread| Ok("ok")));
    }
    for i in 1..n {
        builder = builder.add_edge(format!("s{}", i - 1), format!("s{i}"));
    }
    builder
}

#[test]
fn a_chain_of_100_000_nodes_builds() {
    let graph = chain(N).build().unwrap();
    assert_eq!(graph.nodes().len(), N);
    assert_eq!(graph.starts().collect::<Vec<_>>(), ["s0"]);
    assert!(graph.transitions().all(|(_, _, _, is_loop)| !is_loop));
    let workflow = Workflow::builder().graph(graph).build().unwrap();
    assert_eq!(workflow.participants().count(), N);
}

#[test]
fn a_loop_round_100_000_nodes_is_found_and_judged() {
    // The last node goes back to the first: an undeclared loop, which the
    // builder marks as one; being unconditional, it needs a stop condition.
    let graph = chain(N)
        .add_edge(format!("s{}", N - 1), "s0")
        .start("s0")
        .build()
        .unwrap();
    let loops: Vec<(&str, &str)> = graph
        .transitions()
        .filter(|t| t.3)
        .map(|(from, to, _, _)| (from, to))
        .collect();
    assert_eq!(loops, [("s99999", "s0")]);
    let err = Workflow::builder().graph(graph).build().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the cycle s0 -> s1 -> s2 -> ")
            && text.contains(" -> s99999 has no conditional exit"),
        "the cycle is named, in node order"
    );

    let exit = chain(N)
        .add_loop(
            format!("s{}", N - 1),
            "s0",
            Condition::text_contains("again"),
        )
        .build()
        .unwrap();
    assert!(Workflow::builder().graph(exit).build().is_ok());
}
