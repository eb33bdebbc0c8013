//! [`OpenAiClient`]: a [`ChatModel`] speaking the OpenAI chat-completions
//! API — OpenAI itself, and the many servers compatible with it (Ollama,
//! vLLM, llama.cpp, LM Studio, proxies).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::openai_wire::{self, WireError};
use super::retry::{self, RetryPolicy};
use super::sse::{SseDecoder, SseEvent};
use super::{ChatDelta, ChatModel, ChatRequest, ChatResponse, ChatStream, response_deltas};
use crate::error::ModelError;

/// Where requests go when no base URL is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How much of a response body an error quotes.
const EXCERPT_CHARS: usize = 400;

/// An API key. It is only ever written into the `Authorization` header
/// (marked sensitive); `Debug` shows `***`, and bodies quoted in errors
/// have it replaced by `***`.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Describes an [`OpenAiClient`].
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::model::{OpenAiClient, RetryPolicy};
///
/// let client = OpenAiClient::builder("llama3.2")
///     .base_url("http://localhost:11434/v1") // Ollama
///     .timeout(Duration::from_secs(60))
///     .retry(RetryPolicy::new(4, Duration::from_millis(250)))
///     .build()?;
/// # Ok::<(), troupe_agents::ModelError>(())
/// ```
#[derive(Clone)]
pub struct OpenAiClientBuilder {
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
}

impl fmt::Debug for OpenAiClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClientBuilder")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            // Header values may be credentials too: names only.
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiClientBuilder {
    /// Sets the base URL (requests go to `{base_url}/chat/completions`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets the API key, sent as `Authorization: Bearer …`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.api_key = (!key.is_empty()).then_some(ApiKey(key));
        self
    }

    /// Adds a header to every request (for example `OpenAI-Organization`,
    /// or `api-key` for Azure).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the time allowed for one attempt (for a stream: until the
    /// response starts, and then between two chunks). Default 120 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time allowed to connect. Default 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the retry policy (default: 3 attempts, backoff from 500 ms).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Checks the configuration and builds the client.
    pub fn build(self) -> Result<OpenAiClient, ModelError> {
        let base = self.base_url.trim().trim_end_matches('/');
        let url = reqwest::Url::parse(&format!("{base}/chat/completions"))
            .map_err(|e| ModelError::Config(format!("invalid base URL '{base}': {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ModelError::Config(format!(
                "base URL '{base}' must be http or https"
            )));
        }
        if self.model.trim().is_empty() {
            return Err(ModelError::Config("no model name given".into()));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ModelError::Config(format!("invalid header name '{name}'")))?;
            // The value is not quoted: it may be a credential.
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| ModelError::Config(format!("invalid value for header '{name}'")))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let authorization = match &self.api_key {
            Some(key) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {}", key.0)).map_err(|_| {
                        ModelError::Config("the API key is not a valid header value".into())
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        crate::tls::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(OpenAiClient {
            http,
            inner: Arc::new(Inner {
                endpoint: shown_url(&url),
                url,
                model: self.model,
                api_key: self.api_key,
                authorization,
                headers,
                timeout: self.timeout,
                retry: self.retry,
            }),
        })
    }
}

/// The URL as errors and logs show it: a password in it is masked.
fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

struct Inner {
    url: reqwest::Url,
    endpoint: String,
    model: String,
    api_key: Option<ApiKey>,
    authorization: Option<HeaderValue>,
    headers: HeaderMap,
    timeout: Duration,
    retry: RetryPolicy,
}

/// A client of an OpenAI-compatible `POST {base_url}/chat/completions`.
///
/// Non-streaming and SSE streaming, tools and `tool_choice`, JSON-schema
/// `response_format`, token usage (streams ask for it with
/// `stream_options.include_usage`), custom base URL and headers, a timeout
/// per attempt, and retries with exponential backoff on 429, 408, 5xx,
/// connection failures and timeouts, honouring `Retry-After`. Responses are
/// read leniently (see the wire module). Errors name the endpoint, the
/// status and the start of the body; the API key never appears in errors,
/// logs or `Debug` output.
///
/// ```no_run
/// # async fn demo() -> Result<(), troupe_agents::ModelError> {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, OpenAiClient};
///
/// // OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY, OPENAI_MODEL
/// let client = OpenAiClient::from_env()?;
/// let answer = client.complete(&ChatRequest::new(vec![ChatMessage::user("Say hi")])).await?;
/// println!("{}", answer.text_content());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    inner: Arc<Inner>,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.inner.endpoint)
            .field("model", &self.inner.model)
            .field("api_key", &self.inner.api_key)
            .field("headers", &self.inner.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.inner.timeout)
            .field("retry", &self.inner.retry)
            .finish()
    }
}

impl OpenAiClient {
    /// Starts describing a client of `model`, at the default base URL with
    /// no key.
    pub fn builder(model: impl Into<String>) -> OpenAiClientBuilder {
        OpenAiClientBuilder {
            model: model.into(),
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }

    /// A builder configured from the environment: `OPENAI_BASE_URL`
    /// (default [`DEFAULT_BASE_URL`]), `OPENAI_API_KEY`, and the model from
    /// `OPENAI_MODEL`, else `model`.
    pub fn builder_from_env(model: impl Into<String>) -> OpenAiClientBuilder {
        let model = env("OPENAI_MODEL").unwrap_or_else(|| model.into());
        let mut builder = Self::builder(model);
        if let Some(url) = env("OPENAI_BASE_URL") {
            builder = builder.base_url(url);
        }
        if let Some(key) = env("OPENAI_API_KEY") {
            builder = builder.api_key(key);
        }
        builder
    }

    /// A client configured from the environment; the model comes from
    /// `OPENAI_MODEL`, which must be set. Against OpenAI itself (no
    /// `OPENAI_BASE_URL`), `OPENAI_API_KEY` must be set too; local servers
    /// usually need no key.
    pub fn from_env() -> Result<Self, ModelError> {
        if env("OPENAI_MODEL").is_none() {
            return Err(ModelError::Config(
                "OPENAI_MODEL is not set (or use OpenAiClient::from_env_with_model)".into(),
            ));
        }
        Self::from_env_with_model("")
    }

    /// A client configured from the environment, using `model` unless
    /// `OPENAI_MODEL` names another.
    pub fn from_env_with_model(model: impl Into<String>) -> Result<Self, ModelError> {
        let builder = Self::builder_from_env(model);
        if builder.api_key.is_none() && builder.base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(ModelError::Config(format!(
                "OPENAI_API_KEY is not set (required for {DEFAULT_BASE_URL}; set OPENAI_BASE_URL for a local server)"
            )));
        }
        builder.build()
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Result<Vec<u8>, ModelError> {
        serde_json::to_vec(&openai_wire::request_body(
            &self.inner.model,
            request,
            stream,
        ))
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
        if let Some(auth) = &inner.authorization {
            request = request.header(AUTHORIZATION, auth.clone());
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
    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let policy = &self.inner.retry;
        let mut n = 1;
        loop {
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

    fn timeout_error(&self) -> ModelError {
        ModelError::Timeout {
            endpoint: self.inner.endpoint.clone(),
            after: self.inner.timeout,
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return self.timeout_error();
        }
        // The endpoint is named already: reqwest's copy of the URL is noise.
        ModelError::Connect {
            endpoint: self.inner.endpoint.clone(),
            message: self.redact(&error_chain(&e.without_url())),
        }
    }

    fn decode_error(&self, e: WireError, body: &str) -> ModelError {
        match e {
            WireError::Malformed(message) => ModelError::Decode {
                endpoint: self.inner.endpoint.clone(),
                message,
                body: self.excerpt(body),
            },
            WireError::Api(message) => ModelError::Api {
                endpoint: self.inner.endpoint.clone(),
                message: self.redact(&message),
            },
        }
    }

    fn redact(&self, text: &str) -> String {
        match &self.inner.api_key {
            Some(key) => text.replace(&key.0, "***"),
            None => text.to_string(),
        }
    }

    /// The start of a body, on one line, with the key masked.
    fn excerpt(&self, body: &str) -> String {
        let body = self.redact(body.trim());
        let mut out: String = body.chars().take(EXCERPT_CHARS).collect();
        if out.len() < body.len() {
            out.push('…');
        }
        if out.is_empty() {
            out.push_str("(empty body)");
        }
        out.replace(['\n', '\r'], " ")
    }

    async fn complete_once(&self, body: Vec<u8>) -> Result<ChatResponse, ModelError> {
        let attempt = async {
            let response = self.send(body).await?;
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.transport_error(e))?;
            let text = String::from_utf8_lossy(&bytes);
            openai_wire::parse_response(&text).map_err(|e| self.decode_error(e, &text))
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

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// An error and its sources on one line (reqwest's own text is terse).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The state of a streamed response being read.
struct SseReader {
    client: OpenAiClient,
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    pending: VecDeque<Result<ChatDelta, ModelError>>,
}

impl SseReader {
    /// The next delta, or `None` at the end.
    async fn next(&mut self) -> Option<Result<ChatDelta, ModelError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            let response = self.response.as_mut()?;
            let idle = self.client.inner.timeout;
            match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => self.fail(format!("no data for {idle:?}")),
                Ok(Err(e)) => self.fail(self.client.redact(&error_chain(&e.without_url()))),
                Ok(Ok(Some(bytes))) => {
                    for event in self.decoder.feed(&bytes) {
                        self.take_event(event);
                    }
                }
                Ok(Ok(None)) => {
                    // Servers that end without `[DONE]` are accepted.
                    if let Some(event) = self.decoder.finish() {
                        self.take_event(event);
                    }
                    self.response = None;
                }
            }
        }
    }

    fn fail(&mut self, message: String) {
        self.pending.push_back(Err(ModelError::Stream {
            endpoint: self.client.inner.endpoint.clone(),
            message,
        }));
        self.response = None;
    }

    fn take_event(&mut self, event: SseEvent) {
        if self.response.is_none() {
            return; // after `[DONE]` or an error, the rest is ignored
        }
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.response = None;
            return;
        }
        match openai_wire::parse_chunk(data) {
            Ok(deltas) => self.pending.extend(deltas.into_iter().map(Ok)),
            Err(e) => {
                self.pending
                    .push_back(Err(self.client.decode_error(e, data)));
                self.response = None;
            }
        }
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
    fn model_name(&self) -> &str {
        &self.inner.model
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = self.body(request, false)?;
        tracing::debug!(endpoint = %self.inner.endpoint, model = %self.inner.model, "chat completion");
        self.with_retries(|| self.complete_once(body.clone())).await
    }

    /// Streams the answer. Retries cover opening the stream; a stream that
    /// breaks off midway ends with [`ModelError::Stream`]. A server that
    /// ignores `stream: true` and answers with plain JSON is read as a whole.
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        let body = self.body(request, true)?;
        tracing::debug!(endpoint = %self.inner.endpoint, model = %self.inner.model, "streamed chat completion");
        let response = self.with_retries(|| self.open_stream(body.clone())).await?;
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
            let whole =
                openai_wire::parse_response(&text).map_err(|e| self.decode_error(e, &text))?;
            return Ok(Box::pin(futures::stream::iter(
                response_deltas(&whole).into_iter().map(Ok),
            )));
        }
        let reader = SseReader {
            client: self.clone(),
            response: Some(response),
            decoder: SseDecoder::new(),
            pending: VecDeque::new(),
        };
        Ok(Box::pin(futures::stream::unfold(
            reader,
            |mut r| async move { r.next().await.map(|item| (item, r)) },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_stays_out_of_debug_output() {
        let builder = OpenAiClient::builder("m")
            .api_key("sk-secret-123")
            .header("x-api-key", "also-secret");
        let shown = format!("{builder:?}");
        assert!(
            !shown.contains("sk-secret-123") && !shown.contains("also-secret"),
            "{shown}"
        );
        let client = builder
            .base_url("http://user:pw@127.0.0.1:9/v1/")
            .build()
            .unwrap();
        let shown = format!("{client:?}");
        assert!(
            !shown.contains("sk-secret-123") && !shown.contains("also-secret"),
            "{shown}"
        );
        assert!(!shown.contains(":pw@"), "{shown}");
        assert_eq!(
            client.endpoint(),
            "http://user:***@127.0.0.1:9/v1/chat/completions"
        );
        assert_eq!(client.excerpt("echo sk-secret-123"), "echo ***");
    }

    #[test]
    fn bad_configuration_is_refused_clearly() {
        let e = OpenAiClient::builder("m")
            .base_url("not a url")
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("invalid base URL"), "{e}");
        let e = OpenAiClient::builder("m")
            .base_url("ftp://x")
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("http or https"), "{e}");
        let e = OpenAiClient::builder("").build().unwrap_err();
        assert!(e.to_string().contains("no model"), "{e}");
        let e = OpenAiClient::builder("m")
            .header("bad name", "v")
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("bad name"), "{e}");
    }
}
