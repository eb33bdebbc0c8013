//! The span tree of a graph run, kept in memory by an OpenTelemetry
//! exporter: the run, its supersteps, each turn, the model calls, a tool
//! call, and a nested workflow as one node — one trace, each span under
//! the right parent, with the GenAI semantic conventions' attributes.
//!
//! The subscriber is the process's (the run's tasks are on several
//! threads), so this file holds one test.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::Deserialize;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use troupe_agents::{ChatAgent, FunctionTool, ScriptedModel, ScriptedReply};
use troupe_runtime::{Graph, RunContext, Workflow};

#[derive(Deserialize, schemars::JsonSchema)]
struct Lookup {
    topic: String,
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    match attr(span, key) {
        Some(v) => v.as_str().into_owned(),
        None => panic!("span '{}' has no {key}: {:?}", span.name, span.attributes),
    }
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::I64(i)) => *i,
        other => panic!("span '{}': {key} is {other:?}", span.name),
    }
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one '{name}' among {:?}", names(spans));
    found[0]
}

fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| &*s.name).collect()
}

fn id(span: &SpanData) -> SpanId {
    span.span_context.span_id()
}

/// Whether `turn` is a turn of `run`: a child of one of its supersteps.
fn in_superstep_of(spans: &[SpanData], turn: &SpanData, run: &SpanData) -> bool {
    spans.iter().any(|s| {
        s.name == "superstep" && id(s) == turn.parent_span_id && s.parent_span_id == id(run)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_run_makes_one_trace_of_genai_spans() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let lookup = FunctionTool::new("lookup", "Looks a topic up.", |args: Lookup| async move {
        Ok::<_, String>(format!("{} is memory-safe", args.topic))
    });
    let lead = ChatAgent::builder("lead")
        .model(
            ScriptedModel::new([
                ScriptedReply::tool_call("lookup", serde_json::json!({"topic": "Rust"})),
                ScriptedReply::text("Rust is memory-safe."),
            ])
            .named("lead-model"),
        )
        .tool(lookup)
        .build()
        .unwrap();
    let writer = ChatAgent::builder("writer")
        .model(ScriptedModel::new([ScriptedReply::text("Written up.")]).named("writer-model"))
        .build()
        .unwrap();
    let inner = Workflow::builder()
        .name("drafting")
        .participant(writer)
        .build()
        .unwrap();
    let graph = Graph::builder()
        .add_agent(lead)
        .add_agent(inner)
        .add_edge("lead", "drafting")
        .build()
        .unwrap();
    let outer = Workflow::builder()
        .name("desk")
        .graph(graph)
        .build()
        .unwrap();

    // The caller's span, current where the context is made, is the run's
    // parent; the spans below it cross tasks only through the context.
    let caller = tracing::info_span!("caller");
    let result = async { outer.run_task("go", &RunContext::new()).await }
        .instrument(caller)
        .await
        .unwrap();
    assert_eq!(result.final_text(), "Written up.");
    // The caller's span ends once the last context made under it is gone
    // (the run's supervisor drops its own just after answering).
    let mut spans = Vec::new();
    for _ in 0..100 {
        provider.force_flush().unwrap();
        spans = exporter.get_finished_spans().unwrap();
        if spans.iter().any(|s| s.name == "caller") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // ractor's own spans ("Actor") are not troupe's.
    spans.retain(|s| s.name != "Actor");

    let caller = one(&spans, "caller");
    let trace = caller.span_context.trace_id();
    assert!(
        spans.iter().all(|s| s.span_context.trace_id() == trace),
        "one trace: {:?}",
        names(&spans)
    );

    let run = one(&spans, "invoke_workflow desk");
    assert_eq!(run.parent_span_id, id(caller));
    assert_eq!(text(run, "gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(text(run, "troupe.status"), "completed");
    let supersteps: Vec<&SpanData> = spans.iter().filter(|s| s.name == "superstep").collect();
    assert_eq!(supersteps.len(), 2, "lead, then drafting");
    assert!(supersteps.iter().all(|s| s.parent_span_id == id(run)));

    let lead = one(&spans, "invoke_agent lead");
    assert!(in_superstep_of(&spans, lead, run));
    assert_eq!(text(lead, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(lead, "gen_ai.agent.name"), "lead");
    assert!(attr(lead, "error.type").is_none());

    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "chat lead-model")
        .collect();
    assert_eq!(chats.len(), 2, "a call for the tool, one for the answer");
    for chat in &chats {
        assert_eq!(chat.parent_span_id, id(lead));
        assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(text(chat, "gen_ai.provider.name"), "troupe.scripted");
        assert_eq!(text(chat, "gen_ai.request.model"), "lead-model");
        assert!(int(chat, "gen_ai.usage.input_tokens") > 0);
        assert!(int(chat, "gen_ai.usage.output_tokens") > 0);
        // No message contents unless TROUPE_CAPTURE_CONTENT says so.
        assert!(attr(chat, "gen_ai.input.messages").is_none());
    }
    let reasons: Vec<String> = chats
        .iter()
        .map(|c| text(c, "gen_ai.response.finish_reasons"))
        .collect();
    assert!(reasons.contains(&"tool_calls".to_string()), "{reasons:?}");

    let tool = one(&spans, "execute_tool lookup");
    assert_eq!(tool.parent_span_id, id(lead));
    assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(tool, "gen_ai.tool.name"), "lookup");
    assert_eq!(text(tool, "gen_ai.tool.call.id"), "call_1_0");
    assert!(attr(tool, "gen_ai.tool.call.result").is_none());

    // The nested workflow: a turn of the outer run, its run inside it.
    let step = one(&spans, "invoke_agent drafting");
    assert!(in_superstep_of(&spans, step, run));
    let inner = one(&spans, "invoke_workflow drafting");
    assert_eq!(inner.parent_span_id, id(step));
    let writer = one(&spans, "invoke_agent writer");
    assert_eq!(writer.parent_span_id, id(inner));
    let chat = one(&spans, "chat writer-model");
    assert_eq!(chat.parent_span_id, id(writer));

    // Every span of troupe's ended inside its troupe parent (the caller's
    // own span ends when its holders let go, which is the caller's affair).
    for s in &spans {
        if let Some(p) = spans
            .iter()
            .find(|p| id(p) == s.parent_span_id && p.name != "caller")
        {
            assert!(
                s.start_time >= p.start_time && s.end_time <= p.end_time,
                "'{}' ends inside '{}': {:?}..{:?} in {:?}..{:?}",
                s.name,
                p.name,
                s.start_time,
                s.end_time,
                p.start_time,
                p.end_time
            );
        }
    }
}
