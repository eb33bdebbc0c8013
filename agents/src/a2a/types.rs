//! The A2A protocol's types (spec v1.0, JSON-RPC binding), as the JSON the
//! official SDKs send: camelCase fields, enum values such as
//! `TASK_STATE_INPUT_REQUIRED` and `ROLE_USER`, oneofs (a part's content, a
//! stream response's payload) as optional fields of which one is set.
//!
//! Reading is lenient, as the SDKs' own parsers are: unknown fields are
//! ignored, and the 0.3 spellings of roles and states (`user`,
//! `input-required`) are accepted. Writing leaves out what is unset.
//!
//! Why hand-written: the Rust A2A crates were weighed (`cargo info`, Dec
//! 2026). `a2a-protocol-sdk` 0.15 (Apache-2.0; its types crate
//! `a2a-protocol-types`) needs rustc 1.94 and brings prost, prost-types,
//! ring, time and base64 even for the bare types; `ra2a` 0.10 (MIT or
//! Apache-2.0) and `a2a-rs` 0.10 (MIT; its latest needs rustc 1.96, above
//! the 1.95 this workspace builds with) bundle servers, storage and gRPC
//! behind features. All three are pre-1.0, and troupe's server maps runs
//! onto tasks itself rather than through an SDK's executor. What troupe
//! needs on the wire is these few hundred lines of serde, lenient to 0.3
//! spellings, and checked against both official SDKs (tests/a2a_sdk.rs,
//! tests/a2a_js_sdk.rs), which is lighter than any of the crates.
//!
//! ```
//! use troupe_agents::a2a::types::{Part, Role, StreamResponse, TaskState};
//!
//! let line = r#"{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Which order?"}]}}}}"#;
//! let event: StreamResponse = serde_json::from_str(line).unwrap();
//! let update = event.status_update.unwrap();
//! assert_eq!(update.status.state, TaskState::InputRequired);
//! let question = update.status.message.unwrap();
//! assert_eq!(question.role, Role::Agent);
//! assert_eq!(question.text(), "Which order?");
//! assert_eq!(serde_json::to_value(Part::text("hi")).unwrap(), serde_json::json!({"text": "hi"}));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::jsonrpc::{JsonRpcError, JsonRpcRequest, JsonRpcResponse};

/// The protocol version spoken (the `A2A-Version` header, an interface's
/// `protocolVersion`).
pub const PROTOCOL_VERSION: &str = "1.0";
/// The header naming the protocol version of a request (sent by
/// [`A2aClient`](super::A2aClient)).
pub const VERSION_HEADER: &str = "A2A-Version";
/// Where an agent's card is, under its base URL.
pub const CARD_PATH: &str = ".well-known/agent-card.json";
/// The JSON-RPC binding's name in an interface's `protocolBinding`.
pub const JSONRPC_BINDING: &str = "JSONRPC";
/// The HTTP+JSON (REST) binding's name in an interface's `protocolBinding`.
pub const HTTP_JSON_BINDING: &str = "HTTP+JSON";

/// The JSON-RPC methods of the binding.
pub mod method {
    /// Sends a message; answers with a task (or a message).
    pub const SEND: &str = "SendMessage";
    /// Sends a message; answers with a stream of [`StreamResponse`](super::StreamResponse)s.
    pub const STREAM: &str = "SendStreamingMessage";
    /// A task as it stands.
    pub const GET_TASK: &str = "GetTask";
    /// Cancels a task.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// Re-attaches to a task's stream (a task not over yet).
    pub const SUBSCRIBE: &str = "SubscribeToTask";
    /// The tasks, filtered and paged.
    pub const LIST_TASKS: &str = "ListTasks";
}

/// JSON-RPC error codes (the protocol's own and JSON-RPC's).
pub mod code {
    /// No such task.
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// The task is over (or cannot be cancelled).
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// The operation is not supported.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// The request is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The request is not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters are wrong.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Role {
    /// Not said.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client (the caller).
    #[serde(rename = "ROLE_USER", alias = "user")]
    User,
    /// The remote agent.
    #[serde(rename = "ROLE_AGENT", alias = "agent")]
    Agent,
}

/// A piece of a message or an artifact: text, bytes, a URL or JSON data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The content's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// The part as text: its text, its data as JSON, or its URL.
    pub fn as_text(&self) -> Option<String> {
        self.text
            .clone()
            .or_else(|| self.data.as_ref().map(Value::to_string))
            .or_else(|| self.url.clone())
    }
}

/// The text of `parts`, joined by newlines.
pub fn parts_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message between the client and the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct A2aMessage {
    /// Its id, chosen by its sender.
    #[serde(default)]
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it continues (a follow-up to a task waiting for input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    #[serde(default)]
    pub role: Role,
    /// What it says.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tasks it refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl A2aMessage {
    /// A message of one text part.
    pub fn with_text(role: Role, id: impl Into<String>, text: impl Into<String>) -> Self {
        A2aMessage {
            message_id: id.into(),
            role,
            parts: vec![Part::text(text)],
            ..A2aMessage::default()
        }
    }

    /// Its text parts (and data, as JSON), joined by newlines.
    pub fn text(&self) -> String {
        parts_text(&self.parts)
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TaskState {
    /// Not said.
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED", alias = "unknown")]
    Unspecified,
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED", alias = "submitted")]
    Submitted,
    /// Under way.
    #[serde(rename = "TASK_STATE_WORKING", alias = "working")]
    Working,
    /// Done.
    #[serde(rename = "TASK_STATE_COMPLETED", alias = "completed")]
    Completed,
    /// Failed.
    #[serde(rename = "TASK_STATE_FAILED", alias = "failed")]
    Failed,
    /// Cancelled.
    #[serde(rename = "TASK_STATE_CANCELED", alias = "canceled")]
    Canceled,
    /// Waiting for the client's answer (a follow-up message with the task's id).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED", alias = "input-required")]
    InputRequired,
    /// Refused by the agent.
    #[serde(rename = "TASK_STATE_REJECTED", alias = "rejected")]
    Rejected,
    /// Waiting for the client to authenticate.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED", alias = "auth-required")]
    AuthRequired,
}

impl TaskState {
    /// Whether the task is over for good.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Whether the task waits for the client (input or authentication).
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// A task's state, with the message that goes with it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    #[serde(default)]
    pub state: TaskState,
    /// What the agent says about it (the question, when input is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<A2aMessage>,
    /// When it took this state (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id, unique within the task.
    #[serde(default)]
    pub artifact_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A unit of work: a message sent to the agent and what came of it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id.
    #[serde(default)]
    pub id: String,
    /// The conversation it belongs to.
    #[serde(default)]
    pub context_id: String,
    /// Where it stands.
    #[serde(default)]
    pub status: TaskStatus,
    /// Its outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<A2aMessage>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task changed state (in a stream).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// Its conversation.
    #[serde(default)]
    pub context_id: String,
    /// Its new status.
    #[serde(default)]
    pub status: TaskStatus,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task's artifact grew or was replaced (in a stream).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// Its conversation.
    #[serde(default)]
    pub context_id: String,
    /// The artifact (its new parts, when `append`).
    #[serde(default)]
    pub artifact: Artifact,
    /// Whether the parts add to the artifact of that id (else they replace it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// Whether this is the artifact's last piece.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One item of a stream (`SendStreamingMessage`): exactly one field is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamResponse {
    /// The task as it stands (usually first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// A message: the whole answer, without a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<A2aMessage>,
    /// A status change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_update: Option<TaskStatusUpdateEvent>,
    /// An artifact's piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
}

/// How a message is to be handled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// The media types the client takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// How many messages of the history to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Answer at once, with the task under way, instead of when it settles.
    #[serde(default, skip_serializing_if = "is_false")]
    pub return_immediately: bool,
}

/// `SendMessage`'s and `SendStreamingMessage`'s parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The message.
    pub message: A2aMessage,
    /// How to handle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `SendMessage`'s result: a task, or a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResponse {
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// A direct answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<A2aMessage>,
}

/// `GetTask`'s and `CancelTask`'s parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id.
    pub id: String,
    /// How many messages of the history to return (`GetTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

/// Where and how an agent is reached.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint.
    #[serde(default)]
    pub url: String,
    /// The binding (`JSONRPC`, `HTTP+JSON`, `GRPC`).
    #[serde(default)]
    pub protocol_binding: String,
    /// The protocol version (`1.0`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub protocol_version: String,
}

/// What an agent can do besides answering.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether it streams (`SendStreamingMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Whether it pushes notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Whether `GetExtendedAgentCard` answers (to an authenticated caller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// One thing an agent is good at.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Its id.
    #[serde(default)]
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// An agent's self-description, at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Where and how it is reached, preferred first.
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// What it can do.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// The media types it takes.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// The media types it answers in.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// What it is good at.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// How callers authenticate, by scheme name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_schemes: Option<Value>,
    /// The schemes a caller must use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
    /// The endpoint, on a 0.3 card (read only; 1.0 cards list interfaces).
    #[serde(default, skip_serializing)]
    pub url: Option<String>,
}

impl AgentCard {
    /// The JSON-RPC endpoint the card names: its first JSON-RPC
    /// interface, else a 0.3 card's `url`.
    pub fn jsonrpc_url(&self) -> Option<&str> {
        self.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING))
            .map(|i| i.url.as_str())
            .or(self.url.as_deref())
            .filter(|u| !u.trim().is_empty())
    }
}
