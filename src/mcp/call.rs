//! One `tools/call`: the team runs on the message, its questions are put
//! to the client (an elicitation request on a session; an
//! `InputRequiredResult` to call again with on the stateless revision),
//! and its answer is the result. A cancelled call cancels the run.

#![allow(deprecated)] // MCP logging's level (SEP-2577 deprecates it; 2025-11-25 has it).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    InputRequest as McpInput, InputRequiredResult, InputResponses, LoggingLevel, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;
use troupe::{InputRequest, RunContext, RunError, RunResult, Thread, Workflow};

use super::McpTeam;
use super::inner::Inner;
use super::input_keys::keyed;
use super::progress::{self, Events, Reporter};
use super::waiting::Parked;

/// A run under way for a call: its context, events and run slot (held
/// while it runs; a run parked for a stateless client's answers holds
/// none).
struct Live {
    ctx: RunContext,
    events: Events,
    permit: Option<Box<dyn Send + Sync>>,
}

/// A run slot, when the host limits runs; an error says why none is free.
fn admit(inner: &Inner) -> Result<Option<Box<dyn Send + Sync>>, String> {
    inner.admit.as_ref().map(|admit| admit()).transpose()
}

/// Cancels the run if the call goes away before it ends (disarmed once
/// the run ended or was parked).
struct CancelOnDrop(Option<RunContext>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            ctx.cancel();
        }
    }
}

/// Runs `team` for one call.
pub(super) async fn call(
    inner: &Inner,
    team: &McpTeam,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    log: Option<LoggingLevel>,
) -> Result<CallToolResponse, McpError> {
    let stateless = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    let mut reporter =
        Reporter::new(context.peer.clone(), context.meta.get_progress_token()).with_log(log);
    if let Some(handle) = request.request_state.clone() {
        return resume(
            inner,
            team,
            handle,
            request.input_responses,
            &context,
            &mut reporter,
        )
        .await;
    }
    // A bad input is the tool's error, for the model to read and correct
    // (MCP 2025-11-25: input validation errors are tool execution errors).
    let message = match super::tool_io::input(team, &request) {
        Ok(m) => m,
        Err(why) => return Ok(failed(why)),
    };
    let permit = match admit(inner) {
        Ok(p) => p,
        Err(why) => return Ok(failed(why)),
    };
    let record = inner.records.start(&team.name, &message);
    let (sink, events) = progress::channel(record.clone());
    let mut ctx = RunContext::with_sink(sink);
    ctx = match &record {
        Some(r) => ctx.with_run_id(r.id()).with_cancellation(r.cancellation()),
        None => ctx.with_run_id(run_id(&team.name)),
    };
    let mut live = Live {
        ctx,
        events,
        permit,
    };
    let mut guard = CancelOnDrop(Some(live.ctx.clone()));
    let thread = Thread::from_messages([troupe::Message::user(message)]);
    let run = team.workflow.run(thread, &live.ctx);
    let result = reporter
        .follow(
            &mut live.events,
            until_cancelled(run, &context.ct, &live.ctx),
        )
        .await;
    let out = settle(
        inner,
        team,
        live,
        result,
        &context,
        stateless,
        &mut reporter,
    )
    .await;
    guard.0 = None;
    // Answers sent with a first call (no `requestState`): the run asked
    // afresh; answer it from them.
    if let (Ok(CallToolResponse::InputRequired(asked)), Some(responses)) =
        (&out, request.input_responses)
        && let Some(handle) = asked.request_state.clone()
    {
        return resume(
            inner,
            team,
            handle,
            Some(responses),
            &context,
            &mut reporter,
        )
        .await;
    }
    out
}

/// A stateless client's next call: its answers to the run `handle` names.
async fn resume(
    inner: &Inner,
    team: &McpTeam,
    handle: String,
    responses: Option<InputResponses>,
    context: &RequestContext<RoleServer>,
    reporter: &mut Reporter,
) -> Result<CallToolResponse, McpError> {
    let Some(parked) = inner.waiting.take(&handle) else {
        return Err(McpError::invalid_params(
            "`requestState` names no run waiting for answers (answered already, expired, or not from this server)",
            None,
        ));
    };
    if parked.team != team.name {
        let owner = parked.team.clone();
        inner.waiting.put_back(handle, parked);
        return Err(McpError::invalid_params(
            format!(
                "`requestState` belongs to a call of `{owner}`, not `{}`",
                team.name
            ),
            None,
        ));
    }
    let responses = responses.unwrap_or_default();
    let mut answers = Vec::new();
    for (key, q) in keyed(&parked.requests.clone()) {
        let Some(response) = responses.get(&key) else {
            continue;
        };
        match super::asking::answer_of(team, q, response) {
            Ok(a) => answers.push((q.id.clone(), a)),
            Err(why) => {
                let message = format!("inputResponses[\"{key}\"]: {why}");
                inner.waiting.put_back(handle, parked);
                return Err(McpError::invalid_params(message, None));
            }
        }
    }
    if answers.is_empty() {
        // Nothing it asked is answered: ask again, under the same handle.
        let asked = input_required(team, handle.clone(), &parked.requests);
        inner.waiting.put_back(handle, parked);
        return Ok(asked);
    }
    let permit = match admit(inner) {
        Ok(p) => p,
        Err(why) => {
            inner.waiting.put_back(handle, parked);
            return Ok(failed(why));
        }
    };
    let Parked {
        thread,
        ctx,
        events,
        ..
    } = parked;
    let mut live = Live {
        ctx,
        events,
        permit,
    };
    let mut guard = CancelOnDrop(Some(live.ctx.clone()));
    let mut current = thread;
    let mut last: Option<Result<RunResult, RunError>> = None;
    for (id, answer) in answers {
        if !Workflow::pending_requests(&current)
            .iter()
            .any(|q| q.id == id)
        {
            continue;
        }
        let Some(text) = answer else {
            live.ctx.cancel();
            let declined = Err(format!("the question `{id}` was declined"));
            inner.records.settled(&live.ctx, declined, true);
            guard.0 = None;
            return Ok(failed(format!(
                "the question `{id}` was declined; the run of `{}` is cancelled",
                team.name
            )));
        };
        let run = team
            .workflow
            .respond_in_thread(current.clone(), &id, text, &live.ctx);
        let r = reporter
            .follow(
                &mut live.events,
                until_cancelled(run, &context.ct, &live.ctx),
            )
            .await;
        let stop = match &r {
            Ok(ok) => {
                current = ok.thread.clone();
                false
            }
            Err(_) => true,
        };
        last = Some(r);
        if stop {
            break;
        }
    }
    let Some(result) = last else {
        // No answer applied: the run stands where it was.
        let requests = Workflow::pending_requests(&current);
        let handle = inner.waiting.park(Parked::new(
            team.name.clone(),
            current,
            requests.clone(),
            live.ctx,
            live.events,
        ));
        guard.0 = None;
        return Ok(input_required(team, handle, &requests));
    };
    let out = settle(inner, team, live, result, context, true, reporter).await;
    guard.0 = None;
    out
}

/// What a stretch of the run comes to: the answer, a failure, or a
/// question — asked over the session and run on, or parked for a
/// stateless client.
async fn settle(
    inner: &Inner,
    team: &McpTeam,
    mut live: Live,
    mut result: Result<RunResult, RunError>,
    context: &RequestContext<RoleServer>,
    stateless: bool,
    reporter: &mut Reporter,
) -> Result<CallToolResponse, McpError> {
    loop {
        if live.ctx.is_cancelled() || context.ct.is_cancelled() {
            live.ctx.cancel();
            let said = result.map_err(|e| e.to_string());
            inner.records.settled(&live.ctx, said, true);
            return Ok(failed(format!("the run of `{}` was cancelled", team.name)));
        }
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                inner.records.settled(&live.ctx, Err(e.to_string()), true);
                return Ok(failed(format!("the team `{}` failed: {e}", team.name)));
            }
        };
        let pending = Workflow::pending_requests(&r.thread);
        inner
            .records
            .settled(&live.ctx, Ok(r.clone()), pending.is_empty());
        let Some(q) = pending.first().cloned() else {
            drop(live.permit);
            return Ok(super::tool_io::result(team, r.final_text()).into());
        };
        if stateless {
            if let Some(e) = super::asking::missing_capability(team, &pending, context) {
                live.ctx.cancel();
                return Err(e);
            }
            let handle = inner.waiting.park(Parked::new(
                team.name.clone(),
                r.thread,
                pending.clone(),
                live.ctx,
                live.events,
            ));
            return Ok(input_required(team, handle, &pending));
        }
        let asked = super::asking::ask(team, &q, context);
        let answer = tokio::select! {
            answer = asked => answer,
            _ = context.ct.cancelled() => {
                live.ctx.cancel();
                return Ok(failed(format!("the run of `{}` was cancelled", team.name)));
            }
        };
        let answer = match answer {
            Ok(a) => a,
            Err(why) => {
                live.ctx.cancel();
                inner.records.settled(&live.ctx, Err(why.clone()), true);
                return Ok(failed(why));
            }
        };
        let run = team
            .workflow
            .respond_in_thread(r.thread, &q.id, answer, &live.ctx);
        result = reporter
            .follow(
                &mut live.events,
                until_cancelled(run, &context.ct, &live.ctx),
            )
            .await;
    }
}

/// Awaits `work`, cancelling the run when the call is cancelled (the run
/// then ends on its own, soon).
async fn until_cancelled<F: Future>(
    work: F,
    ct: &CancellationToken,
    ctx: &RunContext,
) -> F::Output {
    tokio::pin!(work);
    tokio::select! {
        out = &mut work => return out,
        _ = ct.cancelled() => ctx.cancel(),
    }
    work.await
}

/// A tool result saying the call failed.
fn failed(why: String) -> CallToolResponse {
    let why = troupe::secrets::redact(&why).into_owned();
    CallToolResult::error(vec![ContentBlock::text(why)]).into()
}

/// A run id for a call of `team`: one safe path component.
fn run_id(team: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let clean: String = team
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!(
        "mcp-{clean}-{millis}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// An `InputRequiredResult` asking `requests` (keyed by their ids) of a
/// run parked under `handle`.
fn input_required(team: &McpTeam, handle: String, requests: &[InputRequest]) -> CallToolResponse {
    let asks: BTreeMap<String, McpInput> = keyed(requests)
        .into_iter()
        .map(|(key, q)| (key, super::asking::input_request(team, q)))
        .collect();
    InputRequiredResult::new(Some(asks), Some(handle)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_one_safe_path_component() {
        let id = run_id("refund desk/ü");
        assert!(id.starts_with("mcp-refund-desk---"), "{id}");
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{id}"
        );
    }
}
