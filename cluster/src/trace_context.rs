//! W3C trace context across nodes: the caller's span goes into a remote
//! turn's wire message as a `traceparent`
//! (`00-{trace id}-{span id}-{flags}`), and the host's span for the turn is
//! made its child, so one trace follows a run over every node it touches.
//!
//! Both ends go through `tracing-opentelemetry`: a span has an
//! OpenTelemetry context only when the process exports spans (its
//! subscriber has the OpenTelemetry layer); otherwise nothing is sent and
//! nothing restored.

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `traceparent` of `span`, if it belongs to an OpenTelemetry trace.
pub(crate) fn traceparent(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| format_traceparent(&sc))
}

/// `00-{trace id}-{span id}-{flags}`, as W3C Trace Context writes it.
fn format_traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{:032x}-{:016x}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// The remote span context a `traceparent` names; `None` when it is not
/// one (another version's layout, ids of zeros, bad hex).
pub(crate) fn parse_traceparent(text: &str) -> Option<SpanContext> {
    let mut parts = text.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 {
        return None;
    }
    if flags.len() != 2 {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let sc = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    );
    sc.is_valid().then_some(sc)
}

/// Makes `span` (not entered yet) a child of the caller's span named by
/// `traceparent`. A malformed value, or a process that exports no spans,
/// leaves the span as it is.
pub(crate) fn restore_parent(span: &Span, traceparent: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    let Some(sc) = traceparent.and_then(parse_traceparent) else {
        return;
    };
    // Fails only when the subscriber has no OpenTelemetry layer: then
    // there is no trace to join.
    let _ = span.set_parent(Context::new().with_remote_span_context(sc));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sc = parse_traceparent(text).unwrap();
        assert_eq!(
            sc.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
        assert!(sc.is_sampled() && sc.is_remote());
        assert_eq!(format_traceparent(&sc), text);
    }

    #[test]
    fn a_malformed_traceparent_names_no_parent() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn without_a_subscriber_nothing_is_sent() {
        assert_eq!(traceparent(&Span::none()), None);
        assert_eq!(traceparent(&tracing::info_span!("caller")), None);
    }
}
