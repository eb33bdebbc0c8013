//! A remote turn's span joins the caller's trace: the caller's span
//! travels in the call's wire message as a W3C `traceparent`, and the
//! host's `invoke_agent` span is made its child from that alone (the
//! host's task has no span of the caller's to inherit).
//!
//! One node per process, and the subscriber is the process's: this file
//! holds one test.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;
use troupe_cluster::{Node, RemoteAgent};
use troupe_runtime::{Agent, FnAgent, Message, RunContext, Thread};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_turn_is_a_child_of_the_callers_span() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let node = Node::builder()
        .name("solo")
        .cookie("secret")
        .host(FnAgent::sync("echo", |_: &Thread| Ok("echoed")))
        .start()
        .await
        .unwrap();
    let caller = tracing::info_span!("caller");
    let ctx = RunContext::new().child("team").with_span(caller.clone());
    let remote = RemoteAgent::parse("echo@solo").unwrap();
    let thread = Arc::new(Thread::from_messages([Message::user("hi")]));
    let reply = remote.run(thread, ctx).await.unwrap();
    assert_eq!(reply.messages()[0].text_content(), "echoed");
    drop(caller);
    node.shutdown().await;
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let caller = spans
        .iter()
        .find(|s| s.name == "caller")
        .expect("the caller's span");
    let turn = spans
        .iter()
        .find(|s| s.name == "invoke_agent echo")
        .unwrap_or_else(|| {
            panic!(
                "no remote turn span among {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(
        turn.span_context.trace_id(),
        caller.span_context.trace_id(),
        "the caller's trace"
    );
    assert_eq!(turn.parent_span_id, caller.span_context.span_id());
    assert!(turn.parent_span_is_remote, "its parent came over the wire");
    let path = turn
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "troupe.path")
        .map(|kv| kv.value.as_str().into_owned());
    assert_eq!(
        path.as_deref(),
        Some("team@solo"),
        "the host's path names the node"
    );
}
