//! The CLI's logs and spans: one `tracing` subscriber for the process.
//!
//! - Logs go to stderr (stdout carries the answer and `--events jsonl`),
//!   secrets masked (`log_writer`),
//!   filtered by `--log-level FILTER`, else `RUST_LOG`, else `warn` (ractor's
//!   and ractor_cluster's at `error`); a
//!   filter is an `EnvFilter` directive (`debug`, `troupe=debug,rmcp=warn`).
//! - Spans (runs, supersteps, turns, model and tool calls; see
//!   `troupe_runtime::telemetry`) are exported over OTLP/HTTP (protobuf)
//!   when `--otlp URL` is given (the collector's base URL; spans go to
//!   `URL/v1/traces`) or `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. They are batched, and
//!   flushed by [`shutdown`], which every exit path calls.

use std::io::IsTerminal;
use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// The environment variables that ask for OTLP export without `--otlp`.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// The exporter's provider, shut down (flushed) once on exit.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The metrics' provider (see `metrics`), shut down (exported) on exit.
static METERS: OnceLock<opentelemetry_sdk::metrics::SdkMeterProvider> = OnceLock::new();

/// Why logging or export could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// `--log-level` or `RUST_LOG` is not a filter.
    #[error("invalid log filter '{filter}' (from {from}): {source}")]
    Filter {
        /// The text given.
        filter: String,
        /// Where it came from.
        from: &'static str,
        /// What is wrong with it.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The OTLP exporter could not be built (a bad URL, say).
    #[error("cannot export spans to {endpoint}: {source}")]
    Exporter {
        /// The endpoint asked for.
        endpoint: String,
        /// What went wrong.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// Installs the process's subscriber: logs by `log_level` (else
/// `RUST_LOG`), spans over OTLP to `otlp` (else the environment's
/// endpoint, if any).
pub(crate) fn init(log_level: Option<&str>, otlp: Option<&str>) -> Result<(), TelemetryError> {
    let logs = log_filter(log_level)?;
    let endpoint = otlp_endpoint(otlp);
    // Metrics go where spans go (`URL/v1/metrics` for `--otlp URL`).
    let metrics_url = match &endpoint {
        Some(Endpoint::Flag(traces)) => Some(Some(format!(
            "{}/v1/metrics",
            traces.trim_end_matches("/v1/traces")
        ))),
        Some(Endpoint::Environment) => Some(None),
        None => None,
    };
    let provider = match endpoint {
        Some(endpoint) => Some(provider(endpoint)?),
        None => None,
    };
    let meters =
        match metrics_url {
            Some(url) => Some(super::metrics::provider(url.clone(), resource()).map_err(
                |source| TelemetryError::Exporter {
                    endpoint: url.unwrap_or_else(|| ENDPOINT_VARS.join(" / ")),
                    source,
                },
            )?),
            None => None,
        };
    let metrics = meters.as_ref().map(|m| {
        super::metrics::MetricsLayer::new(m)
            .with_filter(Targets::new().with_target("troupe::events", Level::DEBUG))
    });
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(super::log_writer::redacted_stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(true)
        .with_filter(logs);
    // troupe's spans (and the events inside them) at info and above;
    // other crates' only through the log filter.
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("troupe"))
            .with_filter(Targets::new().with_target("troupe", Level::INFO))
    });
    // Fails only if a subscriber is installed already; then that one logs.
    let _ = Registry::default()
        .with(fmt)
        .with(otel)
        .with(metrics)
        .try_init();
    if let Some(p) = provider {
        let _ = PROVIDER.set(p);
    }
    if let Some(m) = meters {
        let _ = METERS.set(m);
    }
    Ok(())
}

/// Flushes the spans not exported yet and stops the exporter; does nothing
/// without one. Safe to call more than once.
pub(crate) fn shutdown() {
    if let Some(p) = PROVIDER.get() {
        // A collector gone away loses the last spans; nothing else to do.
        let _ = p.shutdown();
    }
    if let Some(m) = METERS.get() {
        let _ = m.shutdown();
    }
}

/// The default log filter: warnings, except from ractor and
/// ractor_cluster, whose warnings (a node that went away, with Rust debug
/// output) are part of a cluster run's normal end, and the model clients'
/// retries, which the console shows as events (`↻ writer: … call, attempt
/// 1 failed …`): a retry said once. Their errors still show.
const DEFAULT_FILTER: &str =
    "warn,ractor=error,ractor_cluster=error,troupe_agents::model::http::calls=error";

/// The log filter: `--log-level`, else `RUST_LOG`, else
/// [`DEFAULT_FILTER`].
fn log_filter(flag: Option<&str>) -> Result<EnvFilter, TelemetryError> {
    let env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (filter, from) = match (flag, env) {
        (Some(f), _) => (f.to_string(), "--log-level"),
        (None, Some(e)) => (e, "RUST_LOG"),
        (None, None) => (DEFAULT_FILTER.to_string(), "the default"),
    };
    EnvFilter::builder()
        .parse(&filter)
        .map_err(|source| TelemetryError::Filter {
            filter,
            from,
            source,
        })
}

/// Where spans go, if anywhere: `--otlp` (a base URL) or the environment.
enum Endpoint {
    /// `--otlp URL`: spans go to `URL/v1/traces`.
    Flag(String),
    /// The OTEL_EXPORTER_OTLP_* variables, read by the exporter itself.
    Environment,
}

fn otlp_endpoint(flag: Option<&str>) -> Option<Endpoint> {
    if let Some(url) = flag {
        let base = url.trim_end_matches('/');
        let url = if base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        };
        return Some(Endpoint::Flag(url));
    }
    ENDPOINT_VARS
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()))
        .then_some(Endpoint::Environment)
}

/// A tracer provider exporting in batches over OTLP/HTTP to `endpoint`.
fn provider(endpoint: Endpoint) -> Result<SdkTracerProvider, TelemetryError> {
    // The exporter's HTTP client is reqwest's with rustls and no bundled
    // crypto provider: troupe's (ring) must be installed first.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    let (builder, named) = match endpoint {
        Endpoint::Flag(url) => {
            super::otlp_probe::warn_if_unreachable(&url);
            (builder.with_endpoint(url.clone()), url)
        }
        Endpoint::Environment => {
            // The traces variable wins over the base one, as the exporter reads them.
            if let Some(url) = ENDPOINT_VARS
                .iter()
                .rev()
                .find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
            {
                super::otlp_probe::warn_if_unreachable(url.trim());
            }
            (builder, ENDPOINT_VARS.join(" / "))
        }
    };
    let exporter = builder.build().map_err(|source| TelemetryError::Exporter {
        endpoint: named,
        source,
    })?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build())
}

/// The exported resource: the service `troupe` unless `OTEL_SERVICE_NAME`.
fn resource() -> Resource {
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name("troupe");
    }
    resource.build()
}
