//! [`OpenAiClient`]: a [`ChatModel`] speaking the OpenAI chat-completions
//! API — OpenAI itself, and the many servers compatible with it (Ollama,
//! vLLM, llama.cpp, LM Studio, proxies).
//!
//! This file holds the client's configuration: the builder, the credentials
//! and how errors quote the server without leaking them. What the client
//! sends, with retries, is in `calls`; reading a streamed answer is in
//! `sse_reader`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::openai_wire::WireError;
use super::retry::RetryPolicy;
use crate::error::ModelError;

mod calls;
mod sse_reader;

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
        // Keys in the base URL (a gateway's `?key=…`) are secrets from here on.
        troupe_runtime::secrets::register_url(&self.base_url);
        let base = self.base_url.trim();
        let shown_base = troupe_runtime::secrets::mask_url(base);
        let mut url = reqwest::Url::parse(base)
            .map_err(|e| ModelError::Config(format!("invalid base URL '{shown_base}': {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ModelError::Config(format!(
                "base URL '{shown_base}' must be http or https"
            )));
        }
        // `{base}/chat/completions`, any query of the base kept after it.
        let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
        url.set_path(&path);
        if self.model.trim().is_empty() {
            return Err(ModelError::Config("no model name given".into()));
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            troupe_runtime::secrets::register(&key.0);
        }
        for (name, value) in &self.headers {
            troupe_runtime::secrets::register_header(name, value);
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

/// The URL as errors and logs show it: a password and query values in it
/// are masked.
fn shown_url(url: &reqwest::Url) -> String {
    troupe_runtime::secrets::mask_url(url.as_str())
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

    /// `text` with every registered secret masked (the key, credential
    /// headers and URL keys of this client among them).
    fn redact(&self, text: &str) -> String {
        troupe_runtime::secrets::redact(text).into_owned()
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
