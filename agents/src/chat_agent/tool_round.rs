//! One round of the tool loop: running the calls of one model answer
//! (concurrently) and picking the handoff, if any.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use tracing::Instrument;
use troupe_runtime::{
    AgentError, Event, Message, RunContext, Thread, message::Handoff, message::ToolCall,
    message::ToolResult,
};

use super::ChatAgent;
use crate::error::ToolError;
use crate::tool::ToolContext;

/// How the error result of a call of a tool the agent does not have
/// begins (the turn's error names it when the model then fails).
pub(super) const NO_SUCH_TOOL: &str = "Error: there is no tool ";

/// What one tool call came to.
pub(super) enum Ran {
    /// It ended with this result.
    Done(ToolResult),
    /// It stopped to ask the user this question (it runs again with the
    /// answer).
    Asks(String),
}

/// What a round gave back.
pub(super) struct RoundOutcome {
    /// One result per call that ended, in the calls' order.
    pub results: Vec<ToolResult>,
    /// The calls that stopped to ask the user, with their questions.
    pub asking: Vec<(ToolCall, String)>,
    /// The handoff that won, if any.
    pub handoff: Option<Handoff>,
}

fn error_result(call: &ToolCall, text: impl std::fmt::Display) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: format!("Error: {text}"),
        is_error: true,
        memory: None,
    }
}

/// The `reason` argument of a handoff call; a handoff whose arguments are
/// unreadable still happens (the intent is clear), with no reason.
fn handoff_reason(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_string))
        .unwrap_or_default()
}

impl ChatAgent {
    /// Runs the calls of one answer. Tools run concurrently; handoff calls
    /// are settled here (first wins). Only a [`ToolError::Fatal`] fails.
    pub(super) async fn run_tool_calls(
        &self,
        calls: &[ToolCall],
        thread: &Arc<Thread>,
        produced: &[Message],
        ctx: &RunContext,
    ) -> Result<RoundOutcome, AgentError> {
        // Tools see the caller's thread as it is now, this turn included.
        // Handoffs never look at it: a round of handoffs alone skips the
        // copy, which would cost the whole thread's length every turn.
        let needs_view = calls
            .iter()
            .any(|c| !self.handoff_index.contains_key(&c.name));
        let view = if needs_view {
            let mut view = Thread::clone(thread);
            for m in produced {
                view.push(m.clone());
            }
            Arc::new(view)
        } else {
            thread.clone()
        };

        let winner = calls
            .iter()
            .position(|c| self.handoff_index.contains_key(&c.name));
        for call in calls {
            ctx.emit_with(|| Event::ToolCall {
                path: ctx.path().clone(),
                call: call.clone(),
            });
        }
        let runs = calls.iter().enumerate().map(|(i, call)| {
            let view = view.clone();
            async move {
                match self.handoff_index.get(&call.name) {
                    Some(&target) => Ok(Ran::Done(self.handoff_result(
                        call,
                        target,
                        winner == Some(i),
                        winner,
                    ))),
                    None => self.run_tool_answered(call, view, ctx, Vec::new()).await,
                }
            }
        });
        let ran = futures::future::join_all(runs)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let mut results = Vec::new();
        let mut asking = Vec::new();
        for (call, ran) in calls.iter().zip(ran) {
            match ran {
                Ran::Done(result) => results.push(result),
                Ran::Asks(question) => asking.push((call.clone(), question)),
            }
        }
        for result in &results {
            ctx.emit_with(|| Event::ToolResult {
                path: ctx.path().clone(),
                result: result.clone(),
            });
        }
        let handoff = winner.and_then(|i| {
            let call = &calls[i];
            let target = self.handoff_index.get(&call.name)?;
            Some(Handoff {
                target: self.handoffs[*target].name.clone(),
                reason: handoff_reason(&call.arguments),
            })
        });
        // No Handoff event here: the workflow reports the handoff message
        // when it routes it, once, wherever the agent runs.
        Ok(RoundOutcome {
            results,
            asking,
            handoff,
        })
    }

    fn handoff_result(
        &self,
        call: &ToolCall,
        target: usize,
        won: bool,
        winner: Option<usize>,
    ) -> ToolResult {
        let target = &self.handoffs[target].name;
        if won {
            ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("Transferred to {target}."),
                is_error: false,
                memory: None,
            }
        } else {
            let first = winner
                .map(|w| format!(" (an earlier handoff call, #{}, was taken)", w + 1))
                .unwrap_or_default();
            error_result(
                call,
                format!("not transferred to {target}: only one handoff per answer{first}"),
            )
        }
    }

    /// Runs one tool call; a failure (even a panic) becomes an error result
    /// for the model, except a fatal one, which fails the turn. `answers`
    /// are the user's answers to what this call asked before.
    pub(super) async fn run_tool_answered(
        &self,
        call: &ToolCall,
        thread: Arc<Thread>,
        ctx: &RunContext,
        answers: Vec<String>,
    ) -> Result<Ran, AgentError> {
        if let Some(result) = self.ask_user_error(call) {
            return Ok(Ran::Done(result));
        }
        let Some(&index) = self.tool_index.get(&call.name) else {
            let known: Vec<&str> = self.definitions.iter().map(|d| d.name.as_str()).collect();
            // A handoff the agent was not given reads as one.
            let what = match call.name.strip_prefix("transfer_to_") {
                Some(target) => format!(
                    "'{}' (a handoff to '{target}', which is not among its handoffs)",
                    call.name
                ),
                None => format!("'{}'", call.name),
            };
            return Ok(Ran::Done(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("{NO_SUCH_TOOL}{what}; the tools are: {}", known.join(", ")),
                is_error: true,
                memory: None,
            }));
        };
        // Its `execute_tool` span parents what the tool starts (an agent
        // as a tool's turn).
        let span = crate::telemetry::tool_span(ctx, &self.name, call);
        let tool_ctx = ToolContext {
            agent: self.name.clone(),
            call_id: call.id.clone(),
            thread,
            run: troupe_runtime::telemetry::with_parent(ctx.clone(), &span),
            answers,
            sampler: Some(crate::tool::Sampler::new(self.model.clone(), self.pricing)),
        };
        ctx.record_tool_call();
        ctx.emit_with(|| Event::ToolCallStarted {
            path: ctx.path().clone(),
            call_id: call.id.clone(),
            name: call.name.clone(),
        });
        let started = Instant::now();
        let result = self.call_tool(index, call, tool_ctx, &span).await;
        ctx.emit_with(|| Event::ToolCallFinished {
            path: ctx.path().clone(),
            call_id: call.id.clone(),
            name: call.name.clone(),
            elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
            error: match &result {
                Ok(Ran::Done(r)) if r.is_error => Some(r.content.clone()),
                Ok(Ran::Done(_)) => None,
                Ok(Ran::Asks(question)) => Some(format!("waits for the user: {question}")),
                Err(e) => Some(e.to_string()),
            },
        });
        match &result {
            Ok(Ran::Done(r)) => crate::telemetry::record_tool_end(&span, Ok(r)),
            Ok(Ran::Asks(_)) => {}
            Err(e) => crate::telemetry::record_tool_end(&span, Err(("fatal", e))),
        }
        result
    }

    /// Calls tool `index` (with the timeout, catching a panic) inside its
    /// `execute_tool` span.
    async fn call_tool(
        &self,
        index: usize,
        call: &ToolCall,
        tool_ctx: ToolContext,
        span: &tracing::Span,
    ) -> Result<Ran, AgentError> {
        let run = AssertUnwindSafe(self.tools[index].call(&call.arguments, tool_ctx))
            .catch_unwind()
            .instrument(span.clone());
        let outcome = match self.tool_timeout {
            Some(after) => match tokio::time::timeout(after, run).await {
                Ok(outcome) => outcome,
                Err(_) => Ok(Err(ToolError::Timeout {
                    tool: call.name.clone(),
                    after,
                })),
            },
            None => run.await,
        };
        match outcome {
            Ok(Ok(output)) => Ok(Ran::Done(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.content,
                is_error: false,
                memory: output.memory,
            })),
            Ok(Err(ToolError::NeedsInput(question))) => Ok(Ran::Asks(question)),
            Ok(Err(ToolError::Fatal(message))) => Err(AgentError::tool(&call.name, message)),
            Ok(Err(e)) => {
                tracing::debug!(agent = %self.name, tool = %call.name, error = %e, "tool call failed");
                Ok(Ran::Done(error_result(call, e)))
            }
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                tracing::warn!(agent = %self.name, tool = %call.name, panic = %text, "tool panicked");
                Ok(Ran::Done(error_result(
                    call,
                    format!("the tool panicked: {text}"),
                )))
            }
        }
    }
}
