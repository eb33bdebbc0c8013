//! [`HttpModel`]: a [`ChatModel`](crate::model::ChatModel) over HTTP, one
//! type for every provider's API, set apart by its wire format (a
//! [`Dialect`]: OpenAI chat completions, OpenAI Responses, Anthropic
//! Messages).
//!
//! This file holds what every provider shares: the builder, the
//! credentials and how errors quote the server without leaking them. What
//! the client sends, with retries, is in `calls`; reading a streamed answer
//! is in `sse_reader`; what sets the providers apart is in `wire`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::ModelError;
use crate::model::rate_limit::{RateLimit, RateLimiter, shared_limiter};
use crate::model::retry::ModelRetryPolicy;

mod calls;
mod sse_reader;
pub(crate) mod wire;

pub use wire::Dialect;
use wire::WireError;

/// How much of a response body an error quotes.
const EXCERPT_CHARS: usize = 400;

/// An API key. It is only ever written into the provider's key header
/// (marked sensitive); `Debug` shows `***`, and bodies quoted in errors
/// have it replaced by `***`.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Describes an [`HttpModel`]: the settings every provider shares (base
/// URL, key, headers, timeouts, retries) and the provider's own
/// (`W`, set through the builder's provider-specific methods).
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::model::{OpenAiClient, ModelRetryPolicy};
///
/// let client = OpenAiClient::builder("llama3.2")
///     .base_url("http://localhost:11434/v1") // Ollama
///     .timeout(Duration::from_secs(60))
///     .retry(ModelRetryPolicy::new(4, Duration::from_millis(250)))
///     .build()?;
/// # Ok::<(), troupe_agents::ModelError>(())
/// ```
#[derive(Clone)]
pub struct HttpModelBuilder<W: Dialect> {
    pub(crate) model: String,
    pub(crate) base_url: String,
    api_key: Option<ApiKey>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    connect_timeout: Duration,
    retry: ModelRetryPolicy,
    rate_limit: Option<RateLimit>,
    limiter: Option<Arc<dyn RateLimiter>>,
    window: Option<usize>,
    pub(crate) dialect: W,
}

impl<W: Dialect> fmt::Debug for HttpModelBuilder<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModelBuilder")
            .field("api", &W::NAME)
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
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

impl<W: Dialect> HttpModelBuilder<W> {
    /// Limits the calls of this model (requests and tokens per minute,
    /// calls in flight), shared by every client built in this process for
    /// the same model name and endpoint: every agent, run and session
    /// using it waits its turn, and a 429's `Retry-After` holds them all.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = (!limit.is_unlimited()).then_some(limit);
        self
    }

    /// Uses `limiter` for this client (a limiter shared wider than the
    /// process, or one the caller shares by hand); replaces
    /// [`rate_limit`](Self::rate_limit).
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Sets the base URL (requests go to `{base_url}/{path}`: the path is
    /// `chat/completions`, `responses` or `v1/messages` by API). A query in
    /// it (Azure's `?api-version=…`) is kept.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets the API key, sent as the provider sends it (`Authorization:
    /// Bearer …` for OpenAI, `x-api-key` for Anthropic).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.api_key = (!key.is_empty()).then_some(ApiKey(key));
        self
    }

    /// Adds a header to every request (for example `OpenAI-Organization`,
    /// `api-key` for Azure, `anthropic-beta`).
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
    pub fn retry(mut self, retry: ModelRetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The model's context window in tokens (prompt and answer together):
    /// a [`ChatAgent`](crate::ChatAgent) with the default context shows it
    /// no more of its thread than fits (unset:
    /// [`DEFAULT_CONTEXT_WINDOW`](crate::DEFAULT_CONTEXT_WINDOW)).
    pub fn context_window(mut self, tokens: usize) -> Self {
        self.window = Some(tokens);
        self
    }

    /// Whether an API key was given.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// Checks the configuration and builds the client.
    pub fn build(self) -> Result<HttpModel<W>, ModelError> {
        // Keys in the base URL (a gateway's `?key=…`) are secrets from here on.
        troupe_runtime::secrets::register_url(&self.base_url);
        let url = endpoint_url(&self.base_url, W::PATH)?;
        if self.model.trim().is_empty() {
            return Err(ModelError::Config("no model name given".into()));
        }
        let mut headers = HeaderMap::new();
        let defaults = self.dialect.default_headers().into_iter();
        for (name, value) in defaults.map(|(n, v)| (n.to_string(), v)) {
            insert_header(&mut headers, &name, &value)?;
        }
        if let Some(key) = &self.api_key {
            troupe_runtime::secrets::register(&key.0);
        }
        for (name, value) in &self.headers {
            troupe_runtime::secrets::register_header(name, value);
            insert_header(&mut headers, name, value)?;
        }
        let authorization = match &self.api_key {
            Some(key) => {
                let (name, value) = self.dialect.auth_header(&key.0);
                let mut value = HeaderValue::from_str(&value).map_err(|_| {
                    ModelError::Config("the API key is not a valid header value".into())
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
            None => None,
        };
        let endpoint = shown_url(&url);
        let limiter = match (self.limiter, self.rate_limit) {
            (Some(limiter), _) => Some(limiter),
            (None, Some(limit)) => {
                Some(shared_limiter(&self.model, &endpoint, limit) as Arc<dyn RateLimiter>)
            }
            (None, None) => None,
        };
        crate::tls::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpModel {
            http,
            inner: Arc::new(Inner {
                endpoint,
                url,
                model: self.model,
                api_key: self.api_key,
                authorization,
                headers,
                timeout: self.timeout,
                retry: self.retry,
                limiter,
                window: self.window,
                dialect: self.dialect,
            }),
        })
    }
}

/// `{base}/{path}`, a query in `base` moved after the path (Azure's
/// `…/deployments/x?api-version=…` becomes `…/deployments/x/chat/completions?api-version=…`).
fn endpoint_url(base_url: &str, path: &str) -> Result<reqwest::Url, ModelError> {
    let base = base_url.trim();
    let (base, query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let base = base.trim_end_matches('/');
    let shown_base = troupe_runtime::secrets::mask_url(base_url.trim());
    let mut url = reqwest::Url::parse(&format!("{base}/{path}"))
        .map_err(|e| ModelError::Config(format!("invalid base URL '{shown_base}': {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "base URL '{shown_base}' must be http or https"
        )));
    }
    url.set_query(query.filter(|q| !q.is_empty()));
    Ok(url)
}

fn insert_header(headers: &mut HeaderMap, name: &str, value: &str) -> Result<(), ModelError> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ModelError::Config(format!("invalid header name '{name}'")))?;
    // The value is not quoted: it may be a credential.
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| ModelError::Config(format!("invalid value for header '{name}'")))?;
    value.set_sensitive(true);
    headers.insert(header, value);
    Ok(())
}

/// The URL as errors and logs show it: a password and query values in it
/// are masked.
fn shown_url(url: &reqwest::Url) -> String {
    troupe_runtime::secrets::mask_url(url.as_str())
}

struct Inner<W> {
    url: reqwest::Url,
    endpoint: String,
    model: String,
    api_key: Option<ApiKey>,
    authorization: Option<(HeaderName, HeaderValue)>,
    headers: HeaderMap,
    timeout: Duration,
    retry: ModelRetryPolicy,
    limiter: Option<Arc<dyn RateLimiter>>,
    window: Option<usize>,
    dialect: W,
}

/// A model behind an HTTP API, speaking wire format `W`: use it through
/// its aliases, [`OpenAiClient`](crate::model::OpenAiClient) (chat
/// completions), [`OpenAiResponsesClient`](crate::model::OpenAiResponsesClient)
/// and [`AnthropicClient`](crate::model::AnthropicClient).
///
/// Every provider gets non-streaming and SSE streaming, tools and
/// `tool_choice`, structured output, token usage, custom base URL and
/// headers, a timeout per attempt, and retries with exponential backoff on
/// 429, 408, 5xx (Anthropic's 529 "overloaded" included), connection
/// failures and timeouts, honouring `Retry-After`. Errors name the
/// endpoint, the status and the start of the body (the provider's own
/// error text); the API key never appears in errors, logs or `Debug` output.
#[derive(Clone)]
pub struct HttpModel<W: Dialect> {
    http: reqwest::Client,
    inner: Arc<Inner<W>>,
}

impl<W: Dialect> fmt::Debug for HttpModel<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModel")
            .field("api", &W::NAME)
            .field("endpoint", &self.inner.endpoint)
            .field("model", &self.inner.model)
            .field("api_key", &self.inner.api_key)
            .field("headers", &self.inner.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.inner.timeout)
            .field("retry", &self.inner.retry)
            .finish()
    }
}

impl<W: Dialect + Default> HttpModel<W> {
    /// Starts describing a client of `model`, at the provider's default
    /// base URL with no key.
    pub fn builder(model: impl Into<String>) -> HttpModelBuilder<W> {
        HttpModelBuilder {
            model: model.into(),
            base_url: W::DEFAULT_BASE_URL.to_string(),
            api_key: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: ModelRetryPolicy::default(),
            rate_limit: None,
            limiter: None,
            window: None,
            dialect: W::default(),
        }
    }
}

impl<W: Dialect> HttpModel<W> {
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

/// An error and its sources on one line (reqwest's own text is terse).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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
    use crate::model::{AnthropicClient, OpenAiClient};

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

    #[test]
    fn a_query_in_the_base_url_follows_the_path() {
        let client = OpenAiClient::builder("gpt-4o")
            .base_url(
                "https://x.openai.azure.com/openai/deployments/gpt-4o/?api-version=2024-10-21",
            )
            .build()
            .unwrap();
        // The query follows the path; as shown, its values are masked (a
        // gateway's `?key=…` is a secret).
        assert_eq!(
            client.endpoint(),
            "https://x.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=***"
        );
        let client = AnthropicClient::builder("claude").build().unwrap();
        assert_eq!(client.endpoint(), "https://api.anthropic.com/v1/messages");
    }
}
