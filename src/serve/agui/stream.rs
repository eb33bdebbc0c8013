//! The SSE stream of one AG-UI run: `RUN_STARTED` and a `STATE_SNAPSHOT`,
//! then the troupe run's events as AG-UI's (`translate.rs`) as they are
//! logged, then its end: `RUN_FINISHED` (`outcome: success`), or, when the
//! run waits for input, a `STATE_SNAPSHOT` and `RUN_FINISHED` with
//! `outcome: interrupt` listing its questions, or `RUN_ERROR`. A question
//! the request's `resume` already answers (a run asking several in turn)
//! is answered on the spot and the stream runs on.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as Sse, KeepAlive};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::input::{ResumeEntry, ResumeStatus};
use super::translate::Translator;
use super::wire;
use crate::serve::run::{Run, Status, usage_json};
use crate::serve::runs;
use crate::serve::state::Shared;

/// What an AG-UI run streams from.
pub(crate) struct Plan {
    /// The server.
    pub(crate) state: Shared,
    /// The troupe run it follows.
    pub(crate) run: Arc<Run>,
    /// The client's thread id.
    pub(crate) thread: String,
    /// The client's run id.
    pub(crate) run_id: String,
    /// The client's parent run id.
    pub(crate) parent: Option<String>,
    /// The position in the run's event log it starts at.
    pub(crate) from: usize,
    /// Answers to questions the run has not asked again yet, by id.
    pub(crate) pending: Vec<ResumeEntry>,
    /// Whether the answer comes whole at the end (no answering agent).
    pub(crate) whole: bool,
    /// The translator.
    pub(crate) translator: Translator,
}

/// Where the stream stands.
struct Cursor {
    plan: Plan,
    changes: watch::Receiver<u64>,
    started: bool,
    done: bool,
}

/// The SSE response of `plan`'s run.
pub(crate) fn stream(
    plan: Plan,
) -> axum::response::sse::Sse<impl futures::Stream<Item = Result<Sse, Infallible>>> {
    let cursor = Cursor {
        changes: plan.run.watch(),
        plan,
        started: false,
        done: false,
    };
    let events = futures::stream::unfold(cursor, |mut c| async move {
        let items = next_items(&mut c).await?;
        let frames: Vec<Result<Sse, Infallible>> =
            items.iter().map(|e| Ok(wire::frame(e))).collect();
        Some((futures::stream::iter(frames), c))
    });
    axum::response::sse::Sse::new(futures::StreamExt::flatten(events))
        .keep_alive(KeepAlive::default())
}

/// A stream of `RUN_STARTED` and `RUN_ERROR`: the request breaks the
/// protocol's interrupt contract (`code` says how), and no run starts.
pub(crate) fn refuse(
    thread: &str,
    run_id: &str,
    parent: Option<&str>,
    code: &str,
    message: &str,
) -> axum::response::sse::Sse<impl futures::Stream<Item = Result<Sse, Infallible>> + use<>> {
    let events = [
        wire::run_started(thread, run_id, parent),
        wire::run_error(message, code),
    ];
    let frames: Vec<Result<Sse, Infallible>> = events.iter().map(|e| Ok(wire::frame(e))).collect();
    axum::response::sse::Sse::new(futures::stream::iter(frames))
}

/// The next events, waiting for them; `None` once the run's end was sent.
async fn next_items(c: &mut Cursor) -> Option<Vec<Value>> {
    if c.done {
        return None;
    }
    let p = &mut c.plan;
    if !c.started {
        c.started = true;
        let snapshot = wire::state_snapshot(p.translator.state.snapshot());
        return Some(vec![
            wire::run_started(&p.thread, &p.run_id, p.parent.as_deref()),
            snapshot,
        ]);
    }
    loop {
        c.changes.borrow_and_update();
        let (logged, status) = {
            let inner = p.run.inner();
            (inner.events.get(p.from), inner.status())
        };
        if let Some(logged) = logged {
            p.from += 1;
            let Some(event) = logged.event() else {
                continue;
            };
            let items = p.translator.take(event);
            if !items.is_empty() {
                return Some(items);
            }
            continue;
        }
        match status {
            Status::Running => {}
            Status::WaitingForInput if answer_pending(p) => continue,
            _ => {
                c.done = true;
                return Some(end(p, status));
            }
        }
        if c.changes.changed().await.is_err() {
            c.done = true;
            return Some(vec![wire::run_error("the run went away", "INTERNAL")]);
        }
    }
}

/// Answers an open question of the run that the request's `resume`
/// answered already (or cancels the run when the user cancelled it);
/// whether it did.
fn answer_pending(p: &mut Plan) -> bool {
    let open: Vec<String> = p
        .run
        .inner()
        .requests
        .iter()
        .map(|q| q.id.clone())
        .collect();
    let Some(at) = p
        .pending
        .iter()
        .position(|r| open.contains(&r.interrupt_id))
    else {
        return false;
    };
    let entry = p.pending.remove(at);
    match entry.status {
        ResumeStatus::Cancelled => runs::cancel_run(&p.run).is_ok(),
        ResumeStatus::Resolved => match entry.answer() {
            Ok(text) => runs::answer(&p.state, &p.run, Some(&entry.interrupt_id), text).is_ok(),
            Err(_) => false,
        },
    }
}

/// The last events of a run that stopped running with `status`.
fn end(p: &mut Plan, status: Status) -> Vec<Value> {
    let mut out = p.translator.close_all();
    let (response, error, usage, tokens, requests) = {
        let inner = p.run.inner();
        let requests: Vec<Value> = inner
            .requests
            .iter()
            .map(|q| json!({"id": q.id, "agent": q.agent, "question": q.prompt}))
            .collect();
        (
            inner.response.clone().unwrap_or_default(),
            inner.error.clone(),
            inner.usage.map(usage_json),
            inner.usage.map(|u| {
                json!([{"inputTokens": u.prompt_tokens, "outputTokens": u.completion_tokens,
                        "totalTokens": u.total()}])
            }),
            requests,
        )
    };
    if p.whole && !p.translator.answered && status != Status::WaitingForInput {
        out.extend(p.translator.whole(&response));
    }
    let ops = p
        .translator
        .state
        .settled(status.as_str(), Value::Array(requests.clone()));
    if !ops.is_empty() {
        out.push(wire::state_delta(ops));
    }
    let result = json!({
        "status": status.as_str(),
        "run": p.run.id,
        "response": response,
        "usage": usage,
    });
    let finished = |outcome: Value| {
        let mut e = wire::run_finished(&p.thread, &p.run_id, outcome, result.clone());
        if let Some(t) = &tokens {
            e["usage"] = t.clone();
        }
        e
    };
    match status {
        Status::WaitingForInput => {
            let interrupts: Vec<Value> = requests
                .iter()
                .map(|q| interrupt(&p.translator, q))
                .collect();
            out.push(wire::state_snapshot(p.translator.state.snapshot()));
            out.push(finished(
                json!({"type": "interrupt", "interrupts": interrupts}),
            ));
        }
        Status::Failed => out.push(wire::run_error(
            &format!(
                "the team's run `{}` failed: {}",
                p.run.id,
                error.as_deref().unwrap_or("unknown error")
            ),
            "RUN_FAILED",
        )),
        Status::Interrupted => out.push(wire::run_error(
            &format!(
                "the team's run `{}` was interrupted (the server is shutting down)",
                p.run.id
            ),
            "RUN_INTERRUPTED",
        )),
        _ => out.push(finished(json!({"type": "success"}))),
    }
    out
}

/// The interrupt of open question `q` (`{id, agent, question}`): bound to
/// the tool call it asks about when there is one (`toolCallId`; an
/// approval's reason is `tool_call`, answered `{"approved": bool}` or in
/// words), else `input_required`, answered in words.
fn interrupt(translator: &Translator, q: &Value) -> Value {
    let agent = q["agent"].as_str().unwrap_or("");
    let question = q["question"].as_str().unwrap_or("");
    let mut i = json!({
        "id": q["id"],
        "reason": "input_required",
        "message": format!("{agent} asks: {question}"),
        "responseSchema": {"type": "string"},
        "metadata": {"agent": agent, "question": question},
    });
    if let Some((call, approval)) = q["id"].as_str().and_then(|id| translator.linked(id)) {
        i["toolCallId"] = json!(call);
        if *approval {
            i["reason"] = json!("tool_call");
            i["responseSchema"] = json!({
                "type": "object",
                "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                "required": ["approved"],
            });
        }
    }
    i
}

/// The resume entries by interrupt id (the last one for an id wins).
pub(crate) fn by_id(entries: &[ResumeEntry]) -> HashMap<&str, &ResumeEntry> {
    entries
        .iter()
        .map(|r| (r.interrupt_id.as_str(), r))
        .collect()
}
