//! What troupe answers an MCP server that asks something of it, in either
//! era (a session's server-initiated requests, or a stateless server's
//! `input_required` rounds), and the notifications it takes in:
//!
//! - elicitation becomes a question to the user ([`super::elicit`]): a call
//!   that has the answer (it ran again after the user answered) gives it,
//!   otherwise the call stops and the agent's turn ends waiting for input;
//! - sampling is answered by the calling agent's own model, metered like
//!   its other model calls, when the server's config allows it;
//! - `roots/list` is answered with no roots (rmcp's default);
//! - progress notifications become [`Event::ToolProgress`] events of the
//!   call they belong to (matched by the progress token troupe sent).
//!
//! Sampling and roots are deprecated by SEP-2577 (rmcp marks their types
//! so), but 2025-11-25 servers use them: hence `allow(deprecated)`.
#![allow(deprecated)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::{Value, json};
use troupe_runtime::{Event, RunContext};

use super::elicit;
use crate::model::{ChatMessage, ChatRequest};
use crate::tool::{Sampler, ToolContext};

/// One tool call in flight on a server: what answers its questions, and
/// where its progress goes.
pub(super) struct CallScope {
    /// The progress token rmcp sent with the call (as JSON), once sent.
    token: Mutex<Option<Value>>,
    call_id: String,
    tool: String,
    ctx: RunContext,
    answers: Vec<String>,
    next_answer: AtomicUsize,
    asked: Mutex<Option<String>>,
    /// Notified when the call asked the user something it has no answer
    /// for: the call stops.
    pub(super) ask: tokio::sync::Notify,
    sampler: Option<Sampler>,
}

impl CallScope {
    /// The result of elicitation `request` (its JSON params): the next of
    /// the user's answers, or — none left — the question, which stops the
    /// call.
    pub(super) fn elicit(&self, server: &str, request: &Value) -> Result<Value, String> {
        let i = self.next_answer.fetch_add(1, Ordering::SeqCst);
        match self.answers.get(i) {
            Some(answer) => Ok(elicit::result(request, answer)),
            None => {
                // A server may echo a registered secret back: masked.
                let question = troupe_runtime::secrets::redact(&elicit::question(server, request))
                    .into_owned();
                tracing::debug!(server, call = %self.call_id, "MCP server asks the user");
                *self.asked.lock().unwrap_or_else(|p| p.into_inner()) = Some(question.clone());
                self.ask.notify_one();
                Err(question)
            }
        }
    }

    /// Notes the progress token the call went out with.
    pub(super) fn set_progress_token(&self, token: &rmcp::model::ProgressToken) {
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = serde_json::to_value(token).ok();
    }

    fn has_token(&self, token: &Value) -> bool {
        self.token
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|t| t == token)
    }

    /// The question the call stopped on, if it did.
    pub(super) fn asked(&self) -> Option<String> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

struct State {
    server: String,
    sampling: bool,
    calls: Mutex<Vec<Arc<CallScope>>>,
}

/// troupe's side of a connection to one server (cheap to clone).
#[derive(Clone)]
pub(super) struct Handler {
    state: Arc<State>,
}

impl Handler {
    /// The handler of server `server`, answering sampling when `sampling`.
    pub(super) fn new(server: &str, sampling: bool) -> Self {
        Handler {
            state: Arc::new(State {
                server: server.to_string(),
                sampling,
                calls: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Registers a call of `tool` made under `ctx` (none: outside an
    /// agent), until [`end`](Self::end).
    pub(super) fn begin(&self, tool: &str, ctx: Option<&ToolContext>) -> Arc<CallScope> {
        let scope = Arc::new(CallScope {
            token: Mutex::new(None),
            call_id: ctx.map(|c| c.call_id.clone()).unwrap_or_default(),
            tool: tool.to_string(),
            ctx: ctx.map(|c| c.run.clone()).unwrap_or_default(),
            answers: ctx.map(|c| c.answers.clone()).unwrap_or_default(),
            next_answer: AtomicUsize::new(0),
            asked: Mutex::new(None),
            ask: tokio::sync::Notify::new(),
            sampler: ctx.and_then(|c| c.sampler.clone()),
        });
        self.calls().push(scope.clone());
        scope
    }

    /// The call is over.
    pub(super) fn end(&self, scope: &Arc<CallScope>) {
        self.calls().retain(|s| !Arc::ptr_eq(s, scope));
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<Arc<CallScope>>> {
        self.state.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The call a server's request belongs to: a session's server does
    /// not say which, so the latest one in flight.
    fn current(&self) -> Option<Arc<CallScope>> {
        self.calls().last().cloned()
    }

    /// The server's configured name.
    pub(super) fn server(&self) -> &str {
        &self.state.server
    }

    /// Answers sampling `request` (its JSON params) for `scope`'s call with
    /// the agent's model.
    pub(super) async fn sample(&self, scope: &CallScope, request: &Value) -> Result<Value, String> {
        if !self.state.sampling {
            return Err(format!(
                "troupe does not answer sampling for MCP server '{}' (set `sampling: true` on it to allow it)",
                self.state.server
            ));
        }
        let Some(sampler) = &scope.sampler else {
            return Err("no model to sample with outside an agent".into());
        };
        let chat = sampling_request(request);
        tracing::debug!(server = %self.state.server, call = %scope.call_id, model = sampler.model_name(), "MCP server's sampling request answered by the agent's model");
        let response = sampler
            .complete(&chat, &scope.ctx)
            .await
            .map_err(|e| format!("the model failed: {e}"))?;
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": response.content.unwrap_or_default()},
            "model": response.model.unwrap_or_else(|| sampler.model_name().to_string()),
            "stopReason": "endTurn",
        }))
    }

    /// What troupe tells servers it can do.
    fn config(&self) -> ClientConfig {
        let mut capabilities = json!({
            "elicitation": {"form": {}, "url": {}},
            "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
        });
        if self.state.sampling {
            capabilities["sampling"] = json!({});
        }
        let info = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "troupe", "version": env!("CARGO_PKG_VERSION")},
        });
        serde_json::from_value(info).unwrap_or_default()
    }
}

/// A sampling request's JSON params as a chat request.
fn sampling_request(request: &Value) -> ChatRequest {
    let mut messages = Vec::new();
    if let Some(system) = request["systemPrompt"].as_str() {
        messages.push(ChatMessage::system(system));
    }
    for m in request["messages"].as_array().into_iter().flatten() {
        let text = content_text(&m["content"]);
        messages.push(match m["role"].as_str() {
            Some("assistant") => ChatMessage::assistant(text),
            _ => ChatMessage::user(text),
        });
    }
    let mut chat = ChatRequest::new(messages);
    chat.max_tokens = request["maxTokens"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok());
    chat.temperature = request["temperature"].as_f64().map(|t| t as f32);
    chat
}

/// A sampling message's content (a block or a list of them) as text.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(blocks) => blocks
            .iter()
            .map(content_text)
            .collect::<Vec<_>>()
            .join("\n"),
        block => match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
            Some(kind) => format!("[{kind}]"),
            None => String::new(),
        },
    }
}

fn internal(message: String) -> ErrorData {
    ErrorData::internal_error(message, None)
}

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = serde_json::to_value(&params).map_err(|e| internal(e.to_string()))?;
        let Some(scope) = self.current() else {
            return Err(ErrorData::invalid_request(
                "sampling is answered only during a tool call",
                None,
            ));
        };
        let result = self
            .sample(&scope, &request)
            .await
            .map_err(|m| ErrorData::invalid_request(m, None))?;
        serde_json::from_value(result).map_err(|e| internal(e.to_string()))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).map_err(|e| internal(e.to_string()))?;
        let result = match self.current() {
            Some(scope) => match scope.elicit(&self.state.server, &request) {
                Ok(result) => result,
                // The user is asked; the call stops (and is cancelled).
                Err(_) => json!({"action": "cancel"}),
            },
            None => json!({"action": "decline"}),
        };
        serde_json::from_value(result).map_err(|e| internal(e.to_string()))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = serde_json::to_value(&params.progress_token).unwrap_or_default();
        let scope = self.calls().iter().find(|s| s.has_token(&token)).cloned();
        if let Some(scope) = scope {
            scope.ctx.emit_with(|| Event::ToolProgress {
                path: scope.ctx.path().clone(),
                call_id: scope.call_id.clone(),
                name: scope.tool.clone(),
                progress: params.progress,
                total: params.total,
                message: params.message.clone(),
            });
        }
    }

    fn get_info(&self) -> ClientConfig {
        self.config()
    }
}
