//! One tool call on an MCP server, in either era, until it ends, stops
//! on a question for the user, or is cancelled.
//!
//! The call is sent through rmcp's [`Peer::send_request_with_option`]
//! rather than its `call_tool` helpers: the request handle names the
//! progress token rmcp put on the request (so the server's progress is the
//! call's), and a call dropped before its answer (the run was cancelled,
//! or the user is asked) sends the server `notifications/cancelled`.
//! A call the server makes a task (the Tasks extension, which troupe
//! declares) is polled with `tasks/get` to its end.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ClientRequest, GetTaskParams, InputRequest, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::json;

use super::connection::Connection;
use super::handler::CallScope;

/// How a call came out.
pub(super) enum Driven {
    Done(CallToolResult),
    /// It stopped on a question for the user.
    Asked(String),
    /// The run was cancelled (the server was sent `notifications/cancelled`).
    Cancelled,
}

/// The most `input_required` rounds one call is given.
const MAX_ROUNDS: usize = 16;

/// Makes the call, in either era: a session's server asks its questions
/// while the call is open (the handler answers them, or stops the call);
/// a stateless server answers `input_required`, whose requests are
/// answered here and the call made again with the responses and the
/// server's request state. Dropping the call (the run was cancelled, or
/// the user is asked) sends the server `notifications/cancelled`.
pub(super) async fn drive(
    connection: &Connection,
    scope: &CallScope,
    mut params: CallToolRequestParams,
    run: &troupe_runtime::RunContext,
) -> Result<Driven, ServiceError> {
    let server = connection.handler.server().to_string();
    for _ in 0..MAX_ROUNDS {
        let once = call_once(connection, scope, params.clone());
        let answer = tokio::select! {
            answer = once => answer?,
            _ = scope.ask.notified() => {
                return Ok(Driven::Asked(scope.asked().unwrap_or_default()));
            }
            _ = cancelled(run) => return Ok(Driven::Cancelled),
        };
        let needed = match answer {
            CallToolResponse::Complete(result) => return Ok(Driven::Done(result)),
            CallToolResponse::InputRequired(needed) => needed,
            CallToolResponse::Task(created) => {
                return poll_task(
                    connection,
                    created.task.task_id,
                    created.task.poll_interval_ms,
                )
                .await;
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        let mut responses = std::collections::BTreeMap::new();
        for (key, request) in needed.input_requests.unwrap_or_default() {
            let response = match request {
                InputRequest::Elicitation(e) => {
                    let request = serde_json::to_value(&e.params).unwrap_or_default();
                    match scope.elicit(&server, &request) {
                        Ok(result) => result,
                        Err(question) => return Ok(Driven::Asked(question)),
                    }
                }
                InputRequest::CreateMessage(m) => {
                    let request = serde_json::to_value(&m.params).unwrap_or_default();
                    connection
                        .handler
                        .sample(scope, &request)
                        .await
                        .map_err(|why| {
                            ServiceError::McpError(rmcp::ErrorData::invalid_request(why, None))
                        })?
                }
                InputRequest::ListRoots(_) => json!({"roots": []}),
                _ => return Err(ServiceError::UnexpectedResponse),
            };
            responses.insert(key, response);
        }
        params.input_responses = (!responses.is_empty()).then_some(responses);
        params.request_state = needed.request_state;
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_ROUNDS,
    })
}

/// Resolves when `run` is cancelled (never for a run that drops its turns
/// when cancelled: dropping the call is the cancellation then).
async fn cancelled(run: &troupe_runtime::RunContext) {
    if run
        .run_until_cancelled(std::future::pending::<()>())
        .await
        .is_none()
    {
        return;
    }
    std::future::pending::<()>().await
}

/// Waits for task `id` (the server made the call a task, SEP-2663): polls
/// `tasks/get` at the interval the server asks for (500 ms when it names
/// none; between 50 ms and 5 s) until the task ends. A call abandoned
/// before then (the run was cancelled) sends `tasks/cancel`.
async fn poll_task(
    connection: &Connection,
    id: String,
    interval: Option<u64>,
) -> Result<Driven, ServiceError> {
    let pace =
        |ms: Option<u64>| std::time::Duration::from_millis(ms.unwrap_or(500).clamp(50, 5000));
    let mut wait = pace(interval);
    let mut guard = CancelTaskOnDrop {
        peer: Some(connection.peer.clone()),
        id: id.clone(),
    };
    loop {
        tokio::time::sleep(wait).await;
        let got = connection
            .peer
            .get_task(GetTaskParams::new(id.clone()))
            .await?;
        wait = pace(got.task.task.poll_interval_ms);
        let wire = serde_json::to_value(&got).unwrap_or_default();
        let failed = |why: String| {
            ServiceError::McpError(rmcp::ErrorData::internal_error(
                format!("task {id} {why}"),
                None,
            ))
        };
        match wire["status"].as_str() {
            Some("completed") => {
                guard.peer = None;
                return serde_json::from_value::<CallToolResult>(wire["result"].clone())
                    .map(Driven::Done)
                    .map_err(|e| failed(format!("ended with a result that is not a tool's: {e}")));
            }
            Some("failed") => {
                guard.peer = None;
                let message = wire["error"]["message"]
                    .as_str()
                    .unwrap_or("no reason given");
                return Err(failed(format!("failed: {message}")));
            }
            Some("cancelled") => {
                guard.peer = None;
                return Err(failed("was cancelled by the server".into()));
            }
            Some("input_required") => {
                return Err(failed(
                    "waits for input, which troupe does not answer inside tasks".into(),
                ));
            }
            _ => {}
        }
    }
}

/// Cancels a task on the server, unless disarmed (its peer taken) first.
struct CancelTaskOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: String,
}

impl Drop for CancelTaskOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.cancel_task(CancelTaskParams::new(id)).await;
            });
        }
    }
}

/// Sends one `tools/call` and waits for its answer: a result, an
/// `input_required` round, or a task.
async fn call_once(
    connection: &Connection,
    scope: &CallScope,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ServiceError> {
    let handle = connection
        .peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await?;
    scope.set_progress_token(&handle.progress_token);
    let mut guard = CancelOnDrop {
        peer: Some(connection.peer.clone()),
        id: handle.id.clone(),
    };
    let answer = handle.await_response().await;
    guard.peer = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Tells the server a request was abandoned, unless disarmed (its peer
/// taken) first.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params = json!({"requestId": self.id, "reason": "troupe abandoned the call (the run was cancelled, or it waits for the user)"});
        let Ok(params) = serde_json::from_value(params) else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}
