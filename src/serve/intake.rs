//! A request's body, taken under the server's limits once the token is
//! checked: a `Content-Length` over `--max-body` is refused with 413 before
//! a byte of the body is read, and the body must arrive within
//! `--body-timeout` of the request's head (else 408).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State as Axum};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::error::ApiError;
use super::state::Shared;

/// The middleware: 413 for a declared body over the limit; the body
/// otherwise read under its deadline.
pub(crate) async fn check(Axum(state): Axum<Shared>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let max = state.limits.max_body;
    if declared.is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX)) {
        let mut response = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than the server accepts (--max-body: {max} bytes)"),
        )
        .into_response();
        // The body is left unread: the connection cannot carry another
        // request.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    let deadline = Instant::now() + state.limits.body_timeout;
    let req = req.map(|body| {
        Body::new(Timed {
            inner: body,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        })
    });
    next.run(req).await
}

/// Why a body read failed: its deadline passed.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time (--body-timeout)")]
pub(crate) struct BodyTimedOut;

/// A request body with a deadline.
struct Timed {
    inner: Body,
    sleep: Pin<Box<Sleep>>,
}

impl hyper::body::Body for Timed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `e` (a body extractor's failure) is a body that timed out.
pub(crate) fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<BodyTimedOut>() {
            return true;
        }
        cur = err.source();
    }
    false
}
