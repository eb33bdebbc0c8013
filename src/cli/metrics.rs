//! The GenAI client metrics over OTLP/HTTP, where spans go:
//! `gen_ai.client.token.usage` (tokens per model call, by
//! `gen_ai.token.type`), `gen_ai.client.operation.duration` (seconds per
//! model call), and troupe's own `troupe.turns` and `troupe.tool_calls`.
//!
//! They are read off the run's log lines (`troupe::events`, see
//! `troupe_runtime`'s event log) by a `tracing` layer, so nothing in the
//! libraries depends on a metrics API; they are exported when the process
//! exits (and every minute before, for long runs).

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

/// A meter provider exporting over OTLP/HTTP to `url` (the full
/// `…/v1/metrics` URL), or where the environment says when `None`.
pub(crate) fn provider(
    url: Option<String>,
    resource: Resource,
) -> Result<SdkMeterProvider, opentelemetry_otlp::ExporterBuildError> {
    let mut builder = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = url {
        builder = builder.with_endpoint(url);
    }
    let reader = PeriodicReader::builder(builder.build()?).build();
    Ok(SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build())
}

/// The layer recording the metrics from `troupe::events` lines.
pub(crate) struct MetricsLayer {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
    turns: Counter<u64>,
    tool_calls: Counter<u64>,
}

impl MetricsLayer {
    /// The instruments, made on `provider`'s meter `troupe`.
    pub(crate) fn new(provider: &SdkMeterProvider) -> Self {
        let meter = provider.meter("troupe");
        MetricsLayer {
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .build(),
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .build(),
            turns: meter
                .u64_counter("troupe.turns")
                .with_description("Agent turns finished")
                .build(),
            tool_calls: meter
                .u64_counter("troupe.tool_calls")
                .with_description("Tool calls made")
                .build(),
        }
    }
}

/// The fields of one event line.
#[derive(Default)]
struct Fields {
    message: String,
    model: String,
    tool: String,
    error: bool,
    latency_ms: u64,
    input: Option<u64>,
    output: Option<u64>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "model" => self.model = value.to_string(),
            "tool" => self.tool = value.to_string(),
            "error" => self.error = true,
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "latency_ms" => self.latency_ms = value,
            "input_tokens" => self.input = Some(value),
            "output_tokens" => self.output = Some(value),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for MetricsLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != "troupe::events" {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        match f.message.as_str() {
            "model call" => {
                let mut attrs = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.request.model", f.model),
                ];
                if f.error {
                    attrs.push(KeyValue::new("error.type", "model"));
                }
                self.duration.record(f.latency_ms as f64 / 1000.0, &attrs);
                for (kind, n) in [("input", f.input), ("output", f.output)] {
                    if let Some(n) = n {
                        let mut attrs = attrs.clone();
                        attrs.push(KeyValue::new("gen_ai.token.type", kind));
                        self.tokens.record(n, &attrs);
                    }
                }
            }
            "turn finished" => self.turns.add(1, &[]),
            "tool call" => self
                .tool_calls
                .add(1, &[KeyValue::new("gen_ai.tool.name", f.tool)]),
            _ => {}
        }
    }
}
