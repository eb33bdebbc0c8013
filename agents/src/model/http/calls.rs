//! What an [`HttpModel`] sends and how it reads the answer: the request
//! body, one attempt and its status, retries with backoff, and the
//! [`ChatModel`] implementation (a whole answer, or a stream handed to
//! `sse_reader`).

use std::future::Future;

use async_trait::async_trait;
use reqwest::header::CONTENT_TYPE;

use super::{Dialect, HttpModel, sse_reader};
use crate::error::ModelError;
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
        let retry_after = retry::retry_after(response.headers());
        let body = response.text().await.unwrap_or_default();
        Err(ModelError::Status {
            endpoint: inner.endpoint.clone(),
            status: status.as_u16(),
            body: self.excerpt(&body),
            retry_after,
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retry
    /// policy gives up.
    async fn with_retries<T, F, Fut>(
        &self,
        observer: &dyn CallObserver,
        mut attempt: F,
    ) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let policy = &self.inner.retry;
        let mut n = 1;
        loop {
            observer.attempt_started(n);
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() && n < policy.max_attempts => {
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
        self.with_retries(observer, || self.complete_once(request, body.clone()))
            .await
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
        let response = self
            .with_retries(observer, || self.open_stream(body.clone()))
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
        Ok(sse_reader::stream(self.clone(), request, response))
    }
}
