//! A run's events as log lines (`tracing` events, target
//! `troupe::events`): `info` when a run starts and ends, `debug` for each
//! turn's start and end, model call (model, attempt, latency, tokens),
//! retry, tool call and checkpoint. Only what events already say is
//! logged: never message contents, tool arguments or results.
//!
//! [`RunContext`](crate::RunContext) logs every event it reports here,
//! whether or not a sink listens; with no subscriber interested, nothing
//! is built.

use tracing::Level;

use super::Event;

/// The target of the lines (`RUST_LOG=troupe::events=debug` shows them alone).
const TARGET: &str = "troupe::events";

/// Whether a subscriber wants any of the lines (checked before an event is
/// built; a cached check of the call site).
pub(crate) fn enabled() -> bool {
    tracing::enabled!(target: TARGET, Level::INFO)
}

/// Logs `event` if it is one worth a line.
pub(crate) fn log(run_id: &str, event: &Event) {
    match event {
        Event::RunStarted { path, participants } => {
            tracing::info!(target: TARGET, %path, run_id, participants, "run started");
        }
        Event::RunFinished {
            path,
            status,
            detail,
            usage,
            turns,
            elapsed_ms,
            ..
        } => {
            tracing::info!(
                target: TARGET,
                %path,
                run_id,
                %status,
                detail = detail.as_deref(),
                turns,
                tokens = usage.total(),
                elapsed_ms = *elapsed_ms as u64,
                "run ended"
            );
        }
        Event::AgentStarted { path, batch } => {
            tracing::debug!(target: TARGET, %path, batch, "turn started");
        }
        Event::AgentFinished {
            path,
            produced,
            elapsed_ms,
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                produced,
                elapsed_ms = *elapsed_ms as u64,
                "turn finished"
            );
        }
        Event::AgentFailed {
            path,
            kind,
            error,
            attempt,
        } => {
            tracing::debug!(target: TARGET, %path, ?kind, attempt, error, "turn failed");
        }
        Event::Retry {
            path,
            attempt,
            error,
            delay_ms,
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                attempt,
                delay_ms = *delay_ms as u64,
                error,
                "turn retry"
            );
        }
        Event::ModelCallFinished {
            path,
            model,
            attempt,
            latency_ms,
            usage,
            usage_estimated,
            error,
            ..
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                model,
                attempt,
                latency_ms = *latency_ms as u64,
                input_tokens = usage.map(|u| u.prompt_tokens),
                output_tokens = usage.map(|u| u.completion_tokens),
                estimated = usage_estimated,
                error = error.as_deref(),
                "model call"
            );
        }
        Event::ModelCallRetry {
            path,
            model,
            attempt,
            error,
            delay_ms,
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                model,
                attempt,
                delay_ms = *delay_ms as u64,
                error,
                "model call retry"
            );
        }
        Event::ToolCallFinished {
            path,
            call_id,
            name,
            elapsed_ms,
            error,
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                tool = name,
                call_id,
                elapsed_ms = *elapsed_ms as u64,
                error = error.as_deref(),
                "tool call"
            );
        }
        Event::CheckpointSaved {
            path,
            checkpoint,
            superstep,
            bytes,
            ..
        } => {
            tracing::debug!(
                target: TARGET,
                %path,
                checkpoint,
                superstep,
                bytes,
                "checkpoint saved"
            );
        }
        _ => {}
    }
}
