//! What an [`HttpModel`] sends and how it reads the answer: the request
//! body, one attempt and its status, retries with backoff, and the
//! [`ChatModel`] implementation (a whole answer, or a stream handed to
//! `sse_reader`).

use std::future::Future;

use async_trait::async_trait;
use reqwest::header::CONTENT_TYPE;

use super::{Dialect, HttpModel, sse_reader};
use crate::error::ModelError;
use crate::model::rate_limit::Permit;
use crate::model::{
    CallObserver, ChatModel, ChatRequest, ChatResponse, ChatStream, NoObserver, response_deltas,
    retry,
};

impl<W: Dialect> HttpModel<W> {
    fn body(&self, request: &ChatRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        let body = self
            .inner
            .dialect
            .request_body(&self.inner.model, request, stream);
        serde_json::to_vec(&body)
            .map_err(|e| ModelError::Config(format!("cannot encode the request: {e}")))
    }

    /// Sends one attempt; an error status becomes [`ModelError::Status`].
    async fn send(&self, body: Vec<u8>) -> Result<reqwest::Response, ModelError> {
        let inner = &self.inner;
        let mut request = self
            .http
            .post(inner.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .headers(inner.headers.clone())
            .body(body);
        if let Some((name, value)) = &inner.authorization {
            request = request.header(name.clone(), value.clone());
        }
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry::retry_after(response.headers()).or_else(|| {
            (status.as_u16() == 429)
                .then(|| retry::rate_limit_reset(response.headers()))
                .flatten()
        });
        let body = response.text().await.unwrap_or_default();
        Err(ModelError::Status {
            endpoint: inner.endpoint.clone(),
            status: status.as_u16(),
            body: self.excerpt(&body),
            retry_after,
        })
    }

    /// Waits for the rate limiter (if any) to let an attempt of about
    /// `tokens` tokens go, telling `observer` when it had to wait.
    async fn admit(&self, tokens: u64, observer: &dyn CallObserver) -> Option<Permit> {
        let permit = self.inner.limiter.as_ref()?.acquire(tokens).await;
        if permit.waited() >= std::time::Duration::from_millis(1) {
            observer.waiting_for_capacity(permit.waited());
        }
        Some(permit)
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retry
    /// policy gives up; each attempt waits for the rate limiter first, and
    /// a rate-limited one holds back every caller of the limiter. The
    /// permit of the attempt that succeeded is returned with its result.
    async fn with_retries<T, F, Fut>(
        &self,
        observer: &dyn CallObserver,
        tokens: u64,
        mut attempt: F,
    ) -> Result<(T, Option<Permit>), ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let policy = &self.inner.retry;
        let mut n = 1;
        loop {
            let permit = self.admit(tokens, observer).await;
            observer.attempt_started(n);
            let outcome = attempt().await;
            if let (Err(e), Some(limiter)) = (&outcome, &self.inner.limiter)
                && retry::RetryOn::of(e) == Some(retry::RetryOn::RateLimit)
            {
                limiter.penalize(e.retry_after().unwrap_or_else(|| policy.delay(n, None)));
            }
            match outcome {
                Ok(v) => return Ok((v, permit)),
                Err(e) if policy.retries(&e) && n < policy.max_attempts => {
                    drop(permit);
                    let wait = policy.delay(n, e.retry_after());
                    tracing::warn!(
                        endpoint = %self.inner.endpoint,
                        attempt = n,
                        wait_ms = wait.as_millis() as u64,
                        error = %e,
                        "model call failed; retrying"
                    );
                    observer.retrying(n, wait, &e);
                    tokio::time::sleep(wait).await;
                    n += 1;
                }
                Err(e) if e.is_retryable() && n > 1 => {
                    return Err(ModelError::RetriesExhausted {
                        endpoint: self.inner.endpoint.clone(),
                        attempts: n,
                        last: Box::new(e),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn complete_once(
        &self,
        request: &ChatRequest,
        body: Vec<u8>,
    ) -> Result<ChatResponse, ModelError> {
        let attempt = async {
            let response = self.send(body).await?;
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.transport_error(e))?;
            let text = String::from_utf8_lossy(&bytes);
            self.inner
                .dialect
                .parse_response(request, &text)
                .map_err(|e| self.decode_error(e, &text))
        };
        tokio::time::timeout(self.inner.timeout, attempt)
            .await
            .unwrap_or_else(|_| Err(self.timeout_error()))
    }

    async fn open_stream(&self, body: Vec<u8>) -> Result<reqwest::Response, ModelError> {
        tokio::time::timeout(self.inner.timeout, self.send(body))
            .await
            .unwrap_or_else(|_| Err(self.timeout_error()))
    }
}

#[async_trait]
impl<W: Dialect> ChatModel for HttpModel<W> {
    fn model_name(&self) -> &str {
        &self.inner.model
    }

    fn provider_name(&self) -> &str {
        W::PROVIDER
    }

    fn context_window(&self) -> Option<usize> {
        self.inner.window
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.complete_observed(request, &NoObserver).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        self.stream_observed(request, &NoObserver).await
    }

    async fn complete_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatResponse, ModelError> {
        let body = self.body(request, false)?;
        tracing::debug!(endpoint = %self.inner.endpoint, model = %self.inner.model, api = W::NAME, "model call");
        let tokens = estimated_tokens(request);
        self.with_retries(observer, tokens, || {
            self.complete_once(request, body.clone())
        })
        .await
        .map(|(response, _permit)| response)
    }

    /// Streams the answer. Retries cover opening the stream; a stream that
    /// breaks off midway ends with [`ModelError::Stream`]. A server that
    /// ignores `stream: true` and answers with plain JSON is read as a whole.
    async fn stream_observed(
        &self,
        request: &ChatRequest,
        observer: &dyn CallObserver,
    ) -> Result<ChatStream, ModelError> {
        let body = self.body(request, true)?;
        tracing::debug!(endpoint = %self.inner.endpoint, model = %self.inner.model, api = W::NAME, "streamed model call");
        let tokens = estimated_tokens(request);
        let (response, permit) = self
            .with_retries(observer, tokens, || self.open_stream(body.clone()))
            .await?;
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            let bytes = tokio::time::timeout(self.inner.timeout, response.bytes())
                .await
                .map_err(|_| self.timeout_error())?
                .map_err(|e| self.transport_error(e))?;
            let text = String::from_utf8_lossy(&bytes);
            let whole = self
                .inner
                .dialect
                .parse_response(request, &text)
                .map_err(|e| self.decode_error(e, &text))?;
            return Ok(Box::pin(futures::stream::iter(
                response_deltas(&whole).into_iter().map(Ok),
            )));
        }
        let stream = sse_reader::stream(self.clone(), request, response);
        // A stream is a call in flight until it ends.
        Ok(match permit {
            Some(permit) => Box::pin(futures::StreamExt::map(stream, move |delta| {
                let _held = &permit;
                delta
            })),
            None => stream,
        })
    }
}

/// Tokens a request may use, for the rate limiter: its text at about four
/// characters a token, and the answer's cap when it sets one.
fn estimated_tokens(request: &ChatRequest) -> u64 {
    let chars: usize = request
        .messages
        .iter()
        .map(|m| m.text().len())
        .sum::<usize>()
        + request
            .tools
            .iter()
            .map(|t| t.description.len() + t.parameters.to_string().len())
            .sum::<usize>();
    (chars as u64).div_ceil(4) + u64::from(request.max_tokens.unwrap_or(0))
}
