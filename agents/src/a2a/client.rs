//! [`A2aClient`]: JSON-RPC over HTTP to a remote A2A agent — its card
//! (read once), unary calls, and streams read event by event.
//!
//! Transport is the model clients': the same [`ModelRetryPolicy`] (429, 408,
//! 5xx, connection failures and timeouts, `Retry-After` honoured), a
//! timeout per attempt (for a stream, until it opens and then between two
//! chunks), the same SSE decoder, and the same redaction of what a server
//! echoes back.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::OnceCell;
use troupe_runtime::secrets;

use super::error::A2aError;
use super::types::{
    AgentCard, CARD_PATH, JsonRpcRequest, JsonRpcResponse, PROTOCOL_VERSION, SendMessageResponse,
    StreamResponse,
};
use crate::error::ModelError;
use crate::model::ModelRetryPolicy;
use crate::model::http::error_chain;
use crate::model::retry::{RetryOn, retry_after};
use crate::model::sse::SseDecoder;

/// [`VERSION_HEADER`](super::types::VERSION_HEADER) as a header name.
const VERSION_HEADER_LOWER: &str = "a2a-version";

/// How much of a body an error quotes.
const EXCERPT_CHARS: usize = 400;

/// Describes an [`A2aClient`].
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::a2a::A2aClient;
///
/// let client = A2aClient::builder("http://127.0.0.1:9999")
///     .header("Authorization", "Bearer t0ken")
///     .timeout(Duration::from_secs(30))
///     .build()?;
/// assert_eq!(client.card_url(), "http://127.0.0.1:9999/.well-known/agent-card.json");
/// # Ok::<(), troupe_agents::a2a::A2aError>(())
/// ```
#[derive(Clone)]
pub struct A2aClientBuilder {
    url: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
    connect_timeout: Duration,
    retry: ModelRetryPolicy,
}

impl fmt::Debug for A2aClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2aClientBuilder")
            .field("url", &secrets::mask_url(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl A2aClientBuilder {
    /// Adds a header to every request (a credential, say: its value is
    /// registered as a secret and never shown).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the time allowed for one attempt (for a stream: until it
    /// opens, then between two chunks). Default 120 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time allowed to connect. Default 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the retry policy (default: the models', 3 attempts).
    pub fn retry(mut self, retry: ModelRetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Checks the URL and headers and builds the client.
    pub fn build(self) -> Result<A2aClient, A2aError> {
        secrets::register_url(&self.url);
        let card_url = card_url(&self.url)?;
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            secrets::register_header(name, value);
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| A2aError::Config(format!("invalid header name '{name}'")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| A2aError::Config(format!("invalid value for header '{name}'")))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        headers.insert(
            HeaderName::from_static(VERSION_HEADER_LOWER),
            HeaderValue::from_static(PROTOCOL_VERSION),
        );
        crate::tls::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| A2aError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(A2aClient {
            http,
            shown: secrets::mask_url(card_url.as_str()),
            card_url,
            headers,
            timeout: self.timeout,
            retry: self.retry,
            card: OnceCell::new(),
        })
    }
}

/// The card's URL: `url` itself when it names a `.json` file, else
/// `{url}/.well-known/agent-card.json`.
fn card_url(url: &str) -> Result<reqwest::Url, A2aError> {
    let url = url.trim();
    let shown = secrets::mask_url(url);
    let full = if url.ends_with(".json") {
        url.to_string()
    } else {
        format!("{}/{CARD_PATH}", url.trim_end_matches('/'))
    };
    let parsed = reqwest::Url::parse(&full)
        .map_err(|e| A2aError::Config(format!("invalid A2A agent URL '{shown}': {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(A2aError::Config(format!(
            "A2A agent URL '{shown}' must be http or https"
        )));
    }
    Ok(parsed)
}

/// The card, and the endpoint it names.
#[derive(Debug)]
struct Resolved {
    card: AgentCard,
    endpoint: reqwest::Url,
    shown: String,
}

/// A client of one remote A2A agent (JSON-RPC binding, protocol 1.0).
///
/// The card is read on first use and kept. Errors are [`A2aError`]s that
/// name the agent.
pub struct A2aClient {
    http: reqwest::Client,
    card_url: reqwest::Url,
    shown: String,
    headers: HeaderMap,
    timeout: Duration,
    retry: ModelRetryPolicy,
    card: OnceCell<Resolved>,
}

impl fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2aClient")
            .field("card_url", &self.shown)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl A2aClient {
    /// Starts describing a client of the agent at `url` (its base URL, or
    /// its card's URL).
    pub fn builder(url: impl Into<String>) -> A2aClientBuilder {
        A2aClientBuilder {
            url: url.into(),
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: ModelRetryPolicy::default(),
        }
    }

    /// Where the card is read (credentials in it masked).
    pub fn card_url(&self) -> &str {
        &self.shown
    }

    /// The agent's card, read on first use.
    pub async fn card(&self) -> Result<&AgentCard, A2aError> {
        Ok(&self.resolved().await?.card)
    }

    async fn resolved(&self) -> Result<&Resolved, A2aError> {
        self.card.get_or_try_init(|| self.fetch_card()).await
    }

    async fn fetch_card(&self) -> Result<Resolved, A2aError> {
        let url = self.shown.clone();
        let body = self
            .with_retries(&url, || async {
                let response = self
                    .http
                    .get(self.card_url.clone())
                    .headers(self.headers.clone())
                    .send()
                    .await
                    .map_err(|e| transport_error(&url, self.timeout, e))?;
                let response = check_status(&url, response).await?;
                response
                    .text()
                    .await
                    .map_err(|e| transport_error(&url, self.timeout, e))
            })
            .await
            .map_err(|e| transport_failure(&url, e))?;
        let malformed = |message: String| A2aError::MalformedCard {
            url: url.clone(),
            message,
        };
        let card: AgentCard = serde_json::from_str(&body).map_err(|e| {
            malformed(format!(
                "not an agent card ({e}); it begins: {}",
                excerpt(&body)
            ))
        })?;
        if card.name.trim().is_empty() {
            return Err(malformed("it has no `name`".into()));
        }
        let Some(endpoint) = card.jsonrpc_url() else {
            return Err(malformed(
                "it names no JSON-RPC endpoint (`supportedInterfaces` with `protocolBinding: JSONRPC`)"
                    .into(),
            ));
        };
        let endpoint = self
            .card_url
            .join(endpoint)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| malformed(format!("its endpoint `{endpoint}` is not an http(s) URL")))?;
        Ok(Resolved {
            shown: secrets::mask_url(endpoint.as_str()),
            card,
            endpoint,
        })
    }

    /// Calls `method` with `params` and reads its result as `T`.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, A2aError> {
        let resolved = self.resolved().await?;
        let url = &resolved.shown;
        let body = request_body(method, params)?;
        let text = self
            .with_retries(url, || async {
                let response = self.post(resolved, body.clone(), false).await?;
                response
                    .text()
                    .await
                    .map_err(|e| transport_error(url, self.timeout, e))
            })
            .await
            .map_err(|e| transport_failure(url, e))?;
        let result = rpc_result(url, method, &text)?;
        serde_json::from_value(result).map_err(|e| A2aError::Protocol {
            url: url.clone(),
            method: method.into(),
            message: format!("unexpected result: {e}"),
        })
    }

    /// Calls `method` (a streaming one) with `params`: its events, read as
    /// they arrive. A server that answers with one JSON result instead of
    /// a stream gives one event.
    pub async fn stream(&self, method: &str, params: Value) -> Result<A2aStream, A2aError> {
        let resolved = self.resolved().await?;
        let url = resolved.shown.clone();
        let body = request_body(method, params)?;
        let response = self
            .with_retries(&url, || self.post(resolved, body.clone(), true))
            .await
            .map_err(|e| transport_failure(&url, e))?;
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut stream = A2aStream {
            url,
            method: method.into(),
            idle: self.timeout,
            response: Some(response),
            decoder: SseDecoder::new(),
            pending: std::collections::VecDeque::new(),
        };
        if !is_sse {
            let response = stream.response.take();
            let text = match response {
                Some(r) => tokio::time::timeout(self.timeout, r.text())
                    .await
                    .map_err(|_| stream.broken(format!("no answer within {:?}", self.timeout)))?
                    .map_err(|e| stream.broken(error_chain(&e.without_url())))?,
                None => String::new(),
            };
            let result = rpc_result(&stream.url, method, &text)?;
            let whole: SendMessageResponse =
                serde_json::from_value(result).map_err(|e| stream.protocol(e.to_string()))?;
            stream.pending.push_back(Ok(StreamResponse {
                task: whole.task,
                message: whole.message,
                ..StreamResponse::default()
            }));
        }
        Ok(stream)
    }

    /// Sends one attempt; an error status is [`ModelError::Status`].
    async fn post(
        &self,
        resolved: &Resolved,
        body: Vec<u8>,
        sse: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let url = &resolved.shown;
        let mut request = self
            .http
            .post(resolved.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .headers(self.headers.clone())
            .body(body);
        if sse {
            request = request.header(ACCEPT, "text/event-stream");
        }
        let response = request
            .send()
            .await
            .map_err(|e| transport_error(url, self.timeout, e))?;
        check_status(url, response).await
    }

    /// Runs `attempt` (each under the timeout) until it succeeds, fails for
    /// good, or the retry policy gives up.
    async fn with_retries<T, F, Fut>(&self, url: &str, mut attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let policy = &self.retry;
        let mut n = 1;
        loop {
            let outcome = tokio::time::timeout(self.timeout, attempt())
                .await
                .unwrap_or_else(|_| {
                    Err(ModelError::Timeout {
                        endpoint: url.to_string(),
                        after: self.timeout,
                    })
                });
            match outcome {
                Ok(v) => return Ok(v),
                Err(e) if policy.retries(&e) && n < policy.max_attempts => {
                    let wait = policy.delay(n, e.retry_after());
                    tracing::warn!(url, attempt = n, wait_ms = wait.as_millis() as u64, error = %e, "A2A call failed; retrying");
                    tokio::time::sleep(wait).await;
                    n += 1;
                }
                Err(e) if e.is_retryable() && n > 1 => {
                    return Err(ModelError::RetriesExhausted {
                        endpoint: url.to_string(),
                        attempts: n,
                        last: Box::new(e),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn request_body(method: &str, params: Value) -> Result<Vec<u8>, A2aError> {
    let id = format!("troupe-{}", troupe_runtime::message::MessageId::new());
    serde_json::to_vec(&JsonRpcRequest::new(id, method, params))
        .map_err(|e| A2aError::Config(format!("cannot encode the {method} request: {e}")))
}

/// The result of a JSON-RPC response body, or its error.
fn rpc_result(url: &str, method: &str, text: &str) -> Result<Value, A2aError> {
    let response: JsonRpcResponse = serde_json::from_str(text).map_err(|e| A2aError::Protocol {
        url: url.into(),
        method: method.into(),
        message: format!(
            "not a JSON-RPC response ({e}); it begins: {}",
            excerpt(text)
        ),
    })?;
    if let Some(error) = response.error {
        return Err(A2aError::Rpc {
            url: url.into(),
            method: method.into(),
            code: error.code,
            message: secrets::redact(&error.message).into_owned(),
        });
    }
    response.result.ok_or_else(|| A2aError::Protocol {
        url: url.into(),
        method: method.into(),
        message: "the response has neither `result` nor `error`".into(),
    })
}

async fn check_status(
    url: &str,
    response: reqwest::Response,
) -> Result<reqwest::Response, ModelError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    Err(ModelError::Status {
        endpoint: url.to_string(),
        status: status.as_u16(),
        body: excerpt(&body),
        retry_after,
    })
}

fn transport_error(url: &str, timeout: Duration, e: reqwest::Error) -> ModelError {
    if e.is_timeout() {
        return ModelError::Timeout {
            endpoint: url.to_string(),
            after: timeout,
        };
    }
    ModelError::Connect {
        endpoint: url.to_string(),
        message: secrets::redact(&error_chain(&e.without_url())).into_owned(),
    }
}

/// A transport failure as the client reports it: unreachable (connection,
/// timeout), or the HTTP status the agent answered.
fn transport_failure(url: &str, e: ModelError) -> A2aError {
    match RetryOn::of(&e) {
        Some(RetryOn::Connect | RetryOn::Timeout) => A2aError::Unreachable {
            url: url.to_string(),
            source: e,
        },
        _ => A2aError::Http {
            url: url.to_string(),
            source: e,
        },
    }
}

/// The start of a body, on one line, secrets masked.
fn excerpt(body: &str) -> String {
    let body = secrets::redact(body.trim()).into_owned();
    let mut out: String = body.chars().take(EXCERPT_CHARS).collect();
    if out.len() < body.len() {
        out.push('…');
    }
    if out.is_empty() {
        out.push_str("(empty body)");
    }
    out.replace(['\n', '\r'], " ")
}

/// The events of a streaming call, read as they arrive.
#[derive(Debug)]
pub struct A2aStream {
    url: String,
    method: String,
    idle: Duration,
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    pending: std::collections::VecDeque<Result<StreamResponse, A2aError>>,
}

impl A2aStream {
    /// The next event; `None` at the end of the stream. After an error the
    /// stream is over.
    pub async fn next(&mut self) -> Option<Result<StreamResponse, A2aError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            let response = self.response.as_mut()?;
            match tokio::time::timeout(self.idle, response.chunk()).await {
                Err(_) => self.fail(self.broken(format!("no data for {:?}", self.idle))),
                Ok(Err(e)) => self.fail(self.broken(error_chain(&e.without_url()))),
                Ok(Ok(Some(bytes))) => {
                    for event in self.decoder.feed(&bytes) {
                        self.take(&event.data);
                    }
                }
                Ok(Ok(None)) => {
                    if let Some(event) = self.decoder.finish() {
                        self.take(&event.data);
                    }
                    self.response = None;
                }
            }
        }
    }

    fn take(&mut self, data: &str) {
        if self.response.is_none() || data.trim().is_empty() {
            return;
        }
        let item = rpc_result(&self.url, &self.method, data).and_then(|result| {
            serde_json::from_value::<StreamResponse>(result)
                .map_err(|e| self.protocol(format!("unexpected stream event: {e}")))
        });
        if item.is_err() {
            self.response = None;
        }
        self.pending.push_back(item);
    }

    fn fail(&mut self, e: A2aError) {
        self.pending.push_back(Err(e));
        self.response = None;
    }

    fn broken(&self, message: String) -> A2aError {
        A2aError::Unreachable {
            url: self.url.clone(),
            source: ModelError::Stream {
                endpoint: self.url.clone(),
                message: secrets::redact(&message).into_owned(),
            },
        }
    }

    fn protocol(&self, message: String) -> A2aError {
        A2aError::Protocol {
            url: self.url.clone(),
            method: self.method.clone(),
            message,
        }
    }
}
