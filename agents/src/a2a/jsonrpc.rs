//! JSON-RPC 2.0's envelope, as A2A's JSON-RPC binding uses it (re-exported
//! from [`types`](super::types)).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC 2.0 request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// The request's id (a string or a number; absent for a notification).
    #[serde(default)]
    pub id: Value,
    /// The method.
    pub method: String,
    /// The parameters.
    #[serde(default)]
    pub params: Value,
}

impl JsonRpcRequest {
    /// A request of `method` with `params`, under `id`.
    pub fn new(id: impl Into<String>, method: &str, params: Value) -> Self {
        JsonRpcRequest {
            jsonrpc: "2.0".into(),
            id: Value::String(id.into()),
            method: method.into(),
            params,
        }
    }
}

/// A JSON-RPC 2.0 error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// Its code (see [`code`](super::types::code)).
    pub code: i64,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// More about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A JSON-RPC 2.0 response: a result or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse {
    /// Always `2.0`.
    pub jsonrpc: String,
    /// The request's id.
    #[serde(default)]
    pub id: Value,
    /// The result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

impl JsonRpcResponse {
    /// A result for request `id`.
    pub fn result(id: Value, result: Value) -> Self {
        JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error for request `id`.
    pub fn error(id: Value, code: i64, message: impl Into<String>) -> Self {
        JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(JsonRpcError {
                code,
                message: message.into(),
                data: None,
            }),
        }
    }
}
