//! The AG-UI events troupe sends, as the protocol spells them (camelCase
//! fields, `type` in capitals, a `timestamp` in milliseconds), and their
//! SSE framing (one `data:` line of JSON per event).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::sse::Event as Sse;
use serde_json::{Value, json};

/// One event: its type and its fields (an object), stamped now.
pub(crate) fn event(kind: &str, mut fields: Value) -> Value {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    if let Value::Object(o) = &mut fields {
        o.insert("type".into(), Value::String(kind.into()));
        o.insert(
            "timestamp".into(),
            json!(u64::try_from(millis).unwrap_or(0)),
        );
    }
    fields
}

/// The event as one SSE frame.
pub(crate) fn frame(event: &Value) -> Sse {
    Sse::default().data(event.to_string())
}

/// `RUN_STARTED`, with `parentRunId` when the client gave one.
pub(crate) fn run_started(thread: &str, run: &str, parent: Option<&str>) -> Value {
    let mut e = json!({"threadId": thread, "runId": run});
    if let Some(p) = parent {
        e["parentRunId"] = json!(p);
    }
    event("RUN_STARTED", e)
}

/// `RUN_FINISHED` with `outcome` (success, or the interrupts) and the
/// troupe run's result.
pub(crate) fn run_finished(thread: &str, run: &str, outcome: Value, result: Value) -> Value {
    event(
        "RUN_FINISHED",
        json!({"threadId": thread, "runId": run, "outcome": outcome, "result": result}),
    )
}

/// `RUN_ERROR` with a message and a code.
pub(crate) fn run_error(message: &str, code: &str) -> Value {
    event(
        "RUN_ERROR",
        json!({"message": troupe::secrets::redact(message), "code": code}),
    )
}

/// `STEP_STARTED` / `STEP_FINISHED` for the step (an agent's or a nested
/// team's path).
pub(crate) fn step(started: bool, name: &str) -> Value {
    let kind = if started {
        "STEP_STARTED"
    } else {
        "STEP_FINISHED"
    };
    event(kind, json!({"stepName": name}))
}

/// `TEXT_MESSAGE_START` of an assistant message (its `name`: the agent's
/// path).
pub(crate) fn text_start(id: &str, name: &str) -> Value {
    event(
        "TEXT_MESSAGE_START",
        json!({"messageId": id, "role": "assistant", "name": name}),
    )
}

/// `TEXT_MESSAGE_CONTENT` (never with an empty delta).
pub(crate) fn text_content(id: &str, delta: &str) -> Value {
    event(
        "TEXT_MESSAGE_CONTENT",
        json!({"messageId": id, "delta": delta}),
    )
}

/// `TEXT_MESSAGE_END`.
pub(crate) fn text_end(id: &str) -> Value {
    event("TEXT_MESSAGE_END", json!({"messageId": id}))
}

/// `TOOL_CALL_START`.
pub(crate) fn tool_start(id: &str, name: &str) -> Value {
    event(
        "TOOL_CALL_START",
        json!({"toolCallId": id, "toolCallName": name}),
    )
}

/// `TOOL_CALL_ARGS` (the arguments' JSON text, or a piece of it).
pub(crate) fn tool_args(id: &str, delta: &str) -> Value {
    event("TOOL_CALL_ARGS", json!({"toolCallId": id, "delta": delta}))
}

/// `TOOL_CALL_END`.
pub(crate) fn tool_end(id: &str) -> Value {
    event("TOOL_CALL_END", json!({"toolCallId": id}))
}

/// `TOOL_CALL_RESULT`, the result as the model sees it.
pub(crate) fn tool_result(message: &str, id: &str, content: &str) -> Value {
    event(
        "TOOL_CALL_RESULT",
        json!({"messageId": message, "toolCallId": id, "content": content, "role": "tool"}),
    )
}

/// `STATE_SNAPSHOT`.
pub(crate) fn state_snapshot(state: &Value) -> Value {
    event("STATE_SNAPSHOT", json!({"snapshot": state}))
}

/// `STATE_DELTA`: a JSON Patch (RFC 6902).
pub(crate) fn state_delta(ops: Vec<Value>) -> Value {
    event("STATE_DELTA", json!({"delta": ops}))
}
