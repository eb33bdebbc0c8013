//! The spans of a model call (`chat {model}`) and of a tool call
//! (`execute_tool {tool}`), after the OpenTelemetry GenAI semantic
//! conventions; the run's and the turn's spans are troupe-runtime's
//! (`troupe_runtime::telemetry`).
//!
//! Each is a child of the span the turn's [`RunContext`] carries (the
//! `invoke_agent` span of the turn), named explicitly. Usage and the model
//! that answered are recorded when the call returns, `error.type` when it
//! fails. Prompts, completions, tool arguments and results are recorded only
//! when `TROUPE_CAPTURE_CONTENT=1` ([`capture_content`]), and then only if a
//! subscriber is interested: nothing is serialized otherwise.

use tracing::Span;
use tracing::field::Empty;
use troupe_runtime::telemetry::{
    capture_content, error_type, record_failure, record_status_error, span_name,
};
use troupe_runtime::{AgentError, RunContext, message::ToolCall, message::ToolResult};

use crate::error::ModelError;
use crate::model::{ChatModel, ChatRequest, ChatResponse, FinishReason};

/// The span of a call of `model` with `request`, under `parent`.
fn chat_span(parent: &Span, model: &dyn ChatModel, request: &ChatRequest) -> Span {
    let name = model.model_name();
    let span = tracing::info_span!(
        target: "troupe::model",
        parent: parent,
        "chat",
        otel.name = %span_name("chat", name),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.provider_name(),
        gen_ai.request.model = name,
        gen_ai.request.temperature = request.temperature.map(f64::from),
        gen_ai.request.max_tokens = request.max_tokens.map(i64::from),
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if capture_content()
        && !span.is_disabled()
        && let Ok(json) = serde_json::to_string(&request.messages)
    {
        span.record("gen_ai.input.messages", json);
    }
    span
}

/// The `chat {model}` span of a call of `model` with `request`, under
/// `ctx`'s span; [`record_chat_end`] completes it. The call is not
/// instrumented with it (the span is parented explicitly, and wrapping the
/// call's future would move it, a cost on every turn).
pub(crate) fn chat_call_span(
    ctx: &RunContext,
    model: &dyn ChatModel,
    request: &ChatRequest,
) -> Span {
    chat_span(ctx.span(), model, request)
}

/// Records how a model call ended on its span: the response's model,
/// finish reason and usage, or the error's type.
pub(crate) fn record_chat_end(span: &Span, result: &Result<ChatResponse, AgentError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(response) => record_response(span, response),
        Err(e) => record_failure(span, &model_error_type(e), e),
    }
}

fn record_response(span: &Span, response: &ChatResponse) {
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    span.record(
        "gen_ai.response.finish_reasons",
        finish_reason(&response.finish_reason),
    );
    if let Some(usage) = response.usage {
        // As i64: OpenTelemetry has no unsigned integers (a u64 would be
        // exported as text).
        span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
    }
    if capture_content()
        && let Ok(json) = serde_json::to_string(&serde_json::json!({
            "content": response.content,
            "tool_calls": response.tool_calls,
        }))
    {
        span.record("gen_ai.output.messages", json);
    }
}

/// `n` as OpenTelemetry's integer type.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The conventions' finish reason.
fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(other) => other,
        FinishReason::Unspecified => "unspecified",
    }
}

/// A model call's `error.type`: the HTTP status when the server answered
/// with one, else what kind of failure it was.
fn model_error_type(e: &AgentError) -> String {
    let mut model = e.downcast_source::<ModelError>();
    while let Some(ModelError::RetriesExhausted { last, .. }) = model {
        model = Some(last);
    }
    match model {
        Some(ModelError::Status { status, .. }) => status.to_string(),
        Some(ModelError::Connect { .. }) => "connect".into(),
        Some(ModelError::Timeout { .. }) => "timeout".into(),
        Some(ModelError::Decode { .. }) => "decode".into(),
        Some(ModelError::Api { .. }) => "api".into(),
        Some(ModelError::Stream { .. }) => "stream".into(),
        Some(ModelError::Config(_)) => "config".into(),
        Some(ModelError::ScriptExhausted { .. }) => "script_exhausted".into(),
        _ => error_type(e.kind()).into(),
    }
}

/// The span of tool call `call` of agent `agent`, under `ctx`'s span.
pub(crate) fn tool_span(ctx: &RunContext, agent: &str, call: &ToolCall) -> Span {
    let span = tracing::info_span!(
        target: "troupe::tool",
        parent: ctx.span(),
        "execute_tool",
        otel.name = %span_name("execute_tool", &call.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.agent.name = agent,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if capture_content() && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
    }
    span
}

/// Records on a tool call's span how it ended: its result (contents only
/// when captured), or the error's type and message when it failed (a
/// result that is an error is described by its content only when contents
/// are captured).
pub(crate) fn record_tool_end(span: &Span, result: Result<&ToolResult, (&str, &AgentError)>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(r) => {
            if r.is_error {
                span.record("error.type", "tool_error");
                if capture_content() {
                    record_status_error(span, &r.content);
                } else {
                    record_status_error(span, &"the tool answered with an error");
                }
            }
            if capture_content() {
                span.record("gen_ai.tool.call.result", r.content.as_str());
            }
        }
        Err((kind, e)) => record_failure(span, kind, e),
    }
}
