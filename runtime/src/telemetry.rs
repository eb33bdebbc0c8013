//! Tracing spans of a run, named and attributed after the OpenTelemetry
//! GenAI semantic conventions: `invoke_workflow {name}` for a run,
//! `superstep` for a graph's superstep, `invoke_agent {agent}` for a turn.
//! (The model's `chat {model}` and a tool's `execute_tool {tool}` spans are
//! made by troupe-agents.)
//!
//! Spans are parented explicitly, never through the span current on a
//! task: a run's supervisor, its agent actors and nested runs each run on
//! tasks of their own, so the parent travels in the
//! [`RunContext`] ([`RunContext::span`](crate::RunContext::span)).
//! Every span carries `otel.name`, the name an OpenTelemetry exporter
//! gives it (the tracing name is static; this one names the agent).
//!
//! Without a subscriber interested in them, making a span costs a cached
//! check of its call site and nothing is formatted or allocated.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::OnceLock;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::agent::{Agent, Reply};
use crate::context::RunContext;
use crate::resumable::status::RunStatus;
use crate::run_error::{AgentError, ErrorKind, RunError};
use crate::thread::Thread;

/// The environment variable that opts in to message contents in spans
/// (prompts, completions, tool arguments and results): `1` or `true`.
pub const CAPTURE_CONTENT_ENV: &str = "TROUPE_CAPTURE_CONTENT";

/// Whether spans may carry message contents ([`CAPTURE_CONTENT_ENV`], read
/// once per process). Off by default, as the conventions advise: contents
/// may be sensitive, and large.
pub fn capture_content() -> bool {
    static CAPTURE: OnceLock<bool> = OnceLock::new();
    *CAPTURE.get_or_init(|| {
        std::env::var(CAPTURE_CONTENT_ENV)
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "True"))
    })
}

/// The span of a run of workflow `name`, under `parent`.
pub fn workflow_span(parent: &Span, name: &str, path: &str) -> Span {
    tracing::info_span!(
        target: "troupe::run",
        parent: parent,
        "invoke_workflow",
        otel.name = %Named("invoke_workflow", name),
        gen_ai.operation.name = "invoke_workflow",
        troupe.workflow = name,
        troupe.path = path,
        troupe.run.id = Empty,
        troupe.status = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// The span of superstep `superstep` of a graph run, under the run's span.
pub fn superstep_span(parent: &Span, superstep: u64) -> Span {
    tracing::info_span!(
        target: "troupe::run",
        parent: parent,
        "superstep",
        otel.name = "superstep",
        // As i64: OpenTelemetry has no unsigned integers.
        troupe.superstep = i64::try_from(superstep).unwrap_or(i64::MAX),
    )
}

/// The span of a turn of `agent` (at `path`), under `parent`.
pub fn agent_span(parent: &Span, agent: &str, path: &str) -> Span {
    tracing::info_span!(
        target: "troupe::agent",
        parent: parent,
        "invoke_agent",
        otel.name = %Named("invoke_agent", agent),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        troupe.path = path,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records on `span` that what it covers failed with `kind`.
pub fn record_error(span: &Span, kind: ErrorKind) {
    if !span.is_disabled() {
        span.record("error.type", error_type(kind));
    }
}

/// Records on `span` that what it covers failed with `kind`, and sets its
/// status to ERROR with `description` (the error's message), as trace
/// backends show a failure. The span must declare `otel.status_code` and
/// `otel.status_description` (troupe's spans do).
pub fn record_failure(span: &Span, kind: &str, description: &dyn fmt::Display) {
    if !span.is_disabled() {
        span.record("error.type", kind);
        record_status_error(span, description);
    }
}

/// Sets `span`'s OpenTelemetry status to ERROR with `description`.
pub fn record_status_error(span: &Span, description: &dyn fmt::Display) {
    if !span.is_disabled() {
        span.record("otel.status_code", "ERROR");
        span.record(
            "otel.status_description",
            tracing::field::display(description),
        );
    }
}

/// The `error.type` of a failure of kind `kind`.
pub fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Failed => "failed",
        ErrorKind::Transient => "transient",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Model => "model",
        ErrorKind::Tool => "tool",
        ErrorKind::Workflow => "workflow",
        ErrorKind::Node => "node",
        ErrorKind::Cancelled => "cancelled",
    }
}

/// The `error.type` of a failed run.
pub fn run_error_type(e: &RunError) -> &'static str {
    match e {
        RunError::AgentFailed { source, .. } => error_type(source.kind()),
        RunError::AgentPanicked { .. } => "panic",
        RunError::AgentLost { .. } => "agent_lost",
        RunError::LoopLimit { .. } => "loop_limit",
        RunError::SuperstepLimit { .. } => "superstep_limit",
        RunError::SchedulerState { .. } => "scheduler_state",
        RunError::Checkpoint(_) => "checkpoint",
        RunError::CheckpointNotSaved { .. } => "checkpoint_not_saved",
        RunError::Runtime { .. } => "runtime",
    }
}

/// Records how a run ended on its span: its status, or the type of its
/// error.
pub fn record_run_end(span: &Span, result: Result<&RunStatus, &RunError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(status) => {
            span.record("troupe.status", tracing::field::display(status));
        }
        Err(e) => {
            span.record("troupe.status", "failed");
            record_failure(span, run_error_type(e), e);
        }
    }
}

/// `ctx` with `span` as the parent of what it starts — the same context
/// when the span is disabled (nobody listens), so that case allocates
/// nothing.
pub fn with_parent(ctx: RunContext, span: &Span) -> RunContext {
    if span.is_disabled() {
        ctx
    } else {
        ctx.with_span(span.clone())
    }
}

/// A turn of `agent` over `thread` inside its `invoke_agent` span (a child
/// of `ctx`'s span), which records the error type if the turn fails. What
/// the turn starts (model calls, tools, a nested run) is parented under it.
pub fn agent_turn(
    agent: Arc<dyn Agent>,
    thread: Arc<Thread>,
    ctx: RunContext,
) -> impl Future<Output = Result<Reply, AgentError>> + Send {
    let span = agent_span(ctx.span(), agent.name(), ctx.path());
    let ctx = with_parent(ctx, &span);
    async move {
        // Nobody listens: no wrapper to poll through on every turn.
        // `(*agent)`: the agent's own future, not the `Arc`'s box around it.
        if span.is_disabled() {
            return (*agent).run(thread, ctx).await;
        }
        let result = (*agent).run(thread, ctx).instrument(span.clone()).await;
        if let Err(e) = &result {
            record_failure(&span, error_type(e.kind()), e);
        }
        result
    }
}

/// `{operation} {name}`, formatted only when a subscriber records it.
struct Named<'a>(&'static str, &'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// `{operation} {name}` as a span's `otel.name`, formatted only when a
/// subscriber records it (for spans made by other crates of troupe).
pub fn span_name<'a>(operation: &'static str, name: &'a str) -> impl fmt::Display + 'a {
    Named(operation, name)
}
