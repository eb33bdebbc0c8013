//! The GenAI client metrics of the `troupe` binary, exported over OTLP/HTTP
//! (`--otlp URL`: `URL/v1/metrics`) to a receiver on 127.0.0.1 that
//! decodes them with opentelemetry-proto.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::{text, troupe, wait, write};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message as _;

/// A lead that calls a researcher as a tool, then answers.
const TEAM: &str = r#"
version: 1
name: desk
models:
  main:
    provider: scripted
agents:
  lead:
    model: main
    tools:
      - agent: researcher
        description: Finds a fact.
    script:
      - tool_call: {name: researcher, arguments: {request: "one fact"}}
      - "The fact is in."
  researcher:
    model: main
    script: ["Rust is memory-safe."]
workflow:
  steps:
    - agent: lead
"#;

/// Runs the team with `configure` applied; asserts it succeeded.
fn run_team(dir: &std::path::Path, configure: impl FnOnce(&mut std::process::Command)) {
    let cfg = write(dir, "desk.yaml", TEAM);
    let mut cmd = troupe(dir, &["run", cfg.to_str().unwrap(), "go", "--quiet"]);
    configure(&mut cmd);
    let out = wait(cmd.spawn().unwrap(), Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

type Metrics = Arc<Mutex<Vec<(String, Vec<HashMap<String, String>>)>>>;

/// Each metric's name and the attributes of its data points.
async fn receive_metrics(State(metrics): State<Metrics>, body: Bytes) -> &'static str {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics request");
    let attrs = |kvs: &[opentelemetry_proto::tonic::common::v1::KeyValue]| {
        kvs.iter()
            .map(|kv| {
                let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(Value::StringValue(s)) => s.clone(),
                    other => format!("{other:?}"),
                };
                (kv.key.clone(), v)
            })
            .collect::<HashMap<_, _>>()
    };
    let mut got = metrics.lock().unwrap();
    for rm in request.resource_metrics {
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                let points = match &m.data {
                    Some(Data::Histogram(h)) => {
                        h.data_points.iter().map(|p| attrs(&p.attributes)).collect()
                    }
                    Some(Data::Sum(s)) => {
                        s.data_points.iter().map(|p| attrs(&p.attributes)).collect()
                    }
                    _ => Vec::new(),
                };
                got.push((m.name, points));
            }
        }
    }
    ""
}

#[test]
fn the_genai_metrics_arrive_over_otlp() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let metrics: Metrics = Arc::default();
    let app = Router::new()
        .route("/v1/traces", post(|| async { "" }))
        .route("/v1/metrics", post(receive_metrics))
        .with_state(metrics.clone());
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    run_team(dir.path(), |cmd| {
        cmd.args(["--otlp", &format!("http://{addr}")]);
    });
    let mut got = Vec::new();
    for _ in 0..100 {
        got = metrics.lock().unwrap().clone();
        if !got.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let find = |name: &str| {
        got.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no metric {name} among {got:?}"))
    };
    let (_, tokens) = find("gen_ai.client.token.usage");
    assert!(
        tokens.iter().any(|a| a["gen_ai.token.type"] == "input"
            && a["gen_ai.request.model"] == "main:lead"
            && a["gen_ai.operation.name"] == "chat"),
        "{tokens:?}"
    );
    assert!(tokens.iter().any(|a| a["gen_ai.token.type"] == "output"));
    let (_, duration) = find("gen_ai.client.operation.duration");
    assert!(!duration.is_empty());
    find("troupe.turns");
    let (_, tools) = find("troupe.tool_calls");
    assert!(
        tools.iter().any(|a| a["gen_ai.tool.name"] == "researcher"),
        "{tools:?}"
    );
}
