//! API errors: `{"error": {"message", "type"}}` with their status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to the caller.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// What went wrong, for the caller.
    pub(crate) message: String,
}

impl ApiError {
    /// A status and a message.
    pub(crate) fn new(status: StatusCode, message: String) -> Self {
        ApiError { status, message }
    }

    /// 400: the request is malformed.
    pub(crate) fn bad_request(message: String) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: no such thing.
    pub(crate) fn not_found(message: String) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409: not now (the run is not in a state that allows it).
    pub(crate) fn conflict(message: String) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 500: the run or the store failed.
    pub(crate) fn internal(message: String) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// The OpenAI-style error type for the status.
    fn kind(&self) -> &'static str {
        match self.status {
            StatusCode::BAD_REQUEST => "invalid_request_error",
            StatusCode::UNAUTHORIZED => "authentication_error",
            StatusCode::NOT_FOUND => "not_found_error",
            StatusCode::CONFLICT => "conflict_error",
            StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            _ => "server_error",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = troupe::secrets::redact(&self.message).into_owned();
        let body = json!({"error": {"message": message, "type": self.kind()}});
        (self.status, Json(body)).into_response()
    }
}
