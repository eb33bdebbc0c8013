//! Strict reading of a JSON-RPC call (A2A v1.0 §9, JSON-RPC 2.0): the
//! envelope (`jsonrpc` exactly `"2.0"`, an `id` that is a string, a
//! number or null, a string `method`, `params` an object when present),
//! the `A2A-Version` header, and the checks every method's parameters
//! share (a message's `messageId` and parts, a history length not
//! negative). Each refusal carries the spec's error code.

use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use troupe::agents::a2a::types::{PROTOCOL_VERSION, VERSION_HEADER, code};

/// `ContentTypeNotSupportedError`.
pub(crate) const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
/// `ExtendedAgentCardNotConfiguredError`.
pub(crate) const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
/// `VersionNotSupportedError`.
pub(crate) const VERSION_NOT_SUPPORTED: i64 = -32009;

/// A JSON-RPC error to answer.
#[derive(Debug)]
pub(crate) struct RpcError {
    /// The code (JSON-RPC's or A2A's).
    pub(crate) code: i64,
    /// What went wrong (secrets redacted).
    pub(crate) message: String,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: troupe::secrets::redact(&message.into()).into_owned(),
        }
    }

    /// Invalid parameters (-32602).
    pub(crate) fn params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
}

/// A call whose envelope is valid.
#[derive(Debug)]
pub(crate) struct Call {
    /// The request's id.
    pub(crate) id: Value,
    /// The method.
    pub(crate) method: String,
    /// The parameters (an object; `{}` when absent).
    pub(crate) params: Value,
}

/// Reads the body of a call: the call, or the error to answer under the
/// id it carries (null when it carries none readable).
pub(crate) fn read(body: &[u8]) -> Result<Call, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::new(code::PARSE_ERROR, format!("invalid JSON payload: {e}")),
        )
    })?;
    let Value::Object(mut fields) = value else {
        let e = RpcError::new(code::INVALID_REQUEST, "a JSON-RPC request is a JSON object");
        return Err((Value::Null, e));
    };
    let id = match fields.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(_) => {
            let e = RpcError::new(
                code::INVALID_REQUEST,
                "`id` must be a string, a number or null",
            );
            return Err((Value::Null, e));
        }
        None => {
            let e = RpcError::new(
                code::INVALID_REQUEST,
                "`id` is missing (notifications are not taken)",
            );
            return Err((Value::Null, e));
        }
    };
    let invalid = |message: &str| (id.clone(), RpcError::new(code::INVALID_REQUEST, message));
    match fields.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return Err(invalid(&format!("`jsonrpc` must be \"2.0\", not {other}")));
        }
        None => return Err(invalid("`jsonrpc` is missing (it must be \"2.0\")")),
    }
    let method = match fields.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(_) => return Err(invalid("`method` must be a non-empty string")),
        None => return Err(invalid("`method` is missing")),
    };
    let params = match fields.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            let e = RpcError::params("`params` must be an object");
            return Err((id, e));
        }
    };
    Ok(Call { id, method, params })
}

/// Checks the protocol version the caller asks for (the `A2A-Version`
/// header, else the `A2A-Version` query parameter): 1.0 (any patch), or
/// none said (the 1.0 method names say it); anything else, 0.3 included
/// (its shapes are not served), is `VersionNotSupportedError`.
pub(crate) fn version(headers: &HeaderMap, query: Option<&str>) -> Result<(), RpcError> {
    let from_query = || {
        query.and_then(|q| {
            q.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                k.eq_ignore_ascii_case(VERSION_HEADER)
                    .then(|| v.to_string())
            })
        })
    };
    let asked = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .or_else(from_query)
        .filter(|v| !v.is_empty());
    let Some(asked) = asked else {
        return Ok(());
    };
    // Major.Minor is what counts (`1.0.2` is 1.0).
    let mut numbers = asked.split('.');
    let major = numbers.next().unwrap_or_default();
    let minor = numbers.next().unwrap_or("0");
    if format!("{major}.{minor}") == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(refuse_version(&asked))
    }
}

/// `VersionNotSupportedError` for a caller of version `asked`.
pub(crate) fn refuse_version(asked: &str) -> RpcError {
    RpcError::new(
        VERSION_NOT_SUPPORTED,
        format!(
            "A2A version {asked} is not supported: this agent speaks A2A {PROTOCOL_VERSION} only \
             (methods `SendMessage`, `GetTask`…, header `A2A-Version: {PROTOCOL_VERSION}`)"
        ),
    )
}

/// `params` as `T`, or -32602 naming the problem.
pub(crate) fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::params(format!("invalid params: {e}")))
}

/// A task id parameter (`id`, or `field`): present, a non-empty string.
pub(crate) fn task_id(params: &Value, field: &str) -> Result<String, RpcError> {
    match params.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(RpcError::params(format!(
            "`{field}` must be a non-empty string"
        ))),
        None => Err(RpcError::params(format!("`{field}` is missing"))),
    }
}

/// A `historyLength` (at `params.field`, or in `params.configuration`):
/// absent, or an integer not negative.
pub(crate) fn history_length(params: &Value) -> Result<Option<usize>, RpcError> {
    let value = params.get("historyLength").or_else(|| {
        params
            .get("configuration")
            .and_then(|c| c.get("historyLength"))
    });
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => Ok(usize::try_from(n).ok()),
            Some(n) => Err(RpcError::params(format!(
                "`historyLength` must not be negative (got {n})"
            ))),
            None => Err(RpcError::params(format!(
                "`historyLength` must be an integer (got {v})"
            ))),
        },
    }
}

/// The checks of a `SendMessage`/`SendStreamingMessage` call's message:
/// it is there, has a non-empty `messageId`, a role, and parts, each
/// with one content (text, raw bytes, a URL or data).
pub(crate) fn message(params: &Value) -> Result<(), RpcError> {
    let Some(message) = params.get("message") else {
        return Err(RpcError::params("`message` is missing"));
    };
    if !message.is_object() {
        return Err(RpcError::params("`message` must be an object"));
    }
    match message.get("messageId") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(_) => return Err(RpcError::params("`message.messageId` must not be empty")),
        None => return Err(RpcError::params("`message.messageId` is missing")),
    }
    match message.get("role").and_then(Value::as_str) {
        Some("ROLE_USER" | "user") => {}
        Some(other) => {
            return Err(RpcError::params(format!(
                "`message.role` must be ROLE_USER, not `{other}`"
            )));
        }
        None => return Err(RpcError::params("`message.role` is missing")),
    }
    let parts = match message.get("parts") {
        Some(Value::Array(parts)) if !parts.is_empty() => parts,
        Some(Value::Array(_)) => return Err(RpcError::params("`message.parts` is empty")),
        Some(_) => return Err(RpcError::params("`message.parts` must be an array")),
        None => return Err(RpcError::params("`message.parts` is missing")),
    };
    for (i, part) in parts.iter().enumerate() {
        let contents = ["text", "raw", "url", "data", "file"]
            .iter()
            .filter(|k| part.get(**k).is_some_and(|v| !v.is_null()))
            .count();
        // 0.3 parts name their kind instead.
        let legacy = part.get("kind").is_some();
        if contents != 1 && !legacy {
            return Err(RpcError::params(format!(
                "`message.parts[{i}]` must have exactly one of text, raw, url or data"
            )));
        }
    }
    history_length(params).map(|_| ())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn code_of(body: &str) -> i64 {
        read(body.as_bytes()).unwrap_err().1.code
    }

    #[test]
    fn the_envelope_is_checked_with_the_spec_codes() {
        assert_eq!(code_of("{"), -32700);
        assert_eq!(code_of("[]"), -32600);
        assert_eq!(
            code_of(r#"{"jsonrpc":"1.0","id":1,"method":"SendMessage"}"#),
            -32600
        );
        assert_eq!(code_of(r#"{"id":1,"method":"SendMessage"}"#), -32600);
        assert_eq!(code_of(r#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(code_of(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), -32600);
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            -32602
        );
        let call = read(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#).unwrap();
        assert_eq!(call.params, json!({}));
    }

    #[test]
    fn messages_and_history_lengths_are_checked() {
        let ok =
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        message(&ok).unwrap();
        let no_id = json!({"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        assert_eq!(message(&no_id).unwrap_err().code, -32602);
        let negative = json!({"id": "t", "historyLength": -1});
        assert_eq!(history_length(&negative).unwrap_err().code, -32602);
        assert_eq!(
            history_length(&json!({"historyLength": 2})).unwrap(),
            Some(2)
        );
    }
}
