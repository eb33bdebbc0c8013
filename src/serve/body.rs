//! [`JsonBody`]: a JSON request body read under the body limit, its
//! failures answered as API errors (413 when too large, 400 when not the
//! JSON expected).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A request body parsed as `T`.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    status,
                    "the request body is larger than the server accepts (--max-body)".into(),
                )
            } else if super::intake::timed_out(&e) {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body did not arrive in time (--body-timeout)".into(),
                )
            } else {
                ApiError::new(status, format!("cannot read the request body: {e}"))
            }
        })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON here: {e}"))
        })
    }
}
