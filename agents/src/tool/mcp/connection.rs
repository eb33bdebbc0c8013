//! One connection to an MCP server: starting (stdio) or reaching (HTTP)
//! it under the startup timeout, requests under the request timeout with
//! failures put in plain words, and closing it with its process group.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::transport::{AuthClient, AuthorizationManager, StreamableHttpClientTransport};
use troupe_runtime::secrets;

use super::config::{McpServerConfig, McpTransport};
use super::handler::Handler;
use super::oauth::Challenge;

use super::process::{Launch, ProcessGroup, spawn};
use crate::error::McpError;
use crate::tool::arguments::readable;

/// A live session with a server.
pub(super) struct Connection {
    pub(super) peer: Peer<RoleClient>,
    /// What answers the server's requests and takes its notifications.
    pub(super) handler: Handler,
    /// Held so that dropping the connection closes it; taken by `close`.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// A stdio server's process group, killed when the connection goes.
    group: Mutex<Option<ProcessGroup>>,
    pub(super) pid: Option<u32>,
    /// A request went unanswered past its timeout: the server is taken for
    /// hung, and closing kills it rather than waiting for it to exit.
    hung: AtomicBool,
    /// A request found the connection broken (an HTTP server that went
    /// away): it is taken for closed, and reconnected.
    broken: AtomicBool,
    /// The OAuth client of an HTTP server that asked for authorization,
    /// re-authorized when a request meets a new challenge.
    oauth: Option<AuthClient<reqwest::Client>>,
}

impl Connection {
    /// Starts or reaches the server and initializes the session, all within
    /// the startup timeout; on any failure a started process group is
    /// killed.
    pub(super) async fn open(config: &McpServerConfig) -> Result<Connection, McpError> {
        let limit = config.startup_limit();
        match tokio::time::timeout(limit, Self::open_unbounded(config)).await {
            Ok(result) => result,
            // The startup future is dropped, and the group guard with it.
            Err(_) => Err(McpError::Timeout {
                server: config.name.clone(),
                operation: "initialize".into(),
                after: limit,
            }),
        }
    }

    async fn open_unbounded(config: &McpServerConfig) -> Result<Connection, McpError> {
        let connect_error = |message: String| McpError::Connect {
            server: config.name.clone(),
            message: secrets::redact(&message).into_owned(),
        };
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => {
                let launch = Launch {
                    command,
                    args,
                    env,
                    inherit_env,
                    cwd: cwd.as_ref(),
                };
                let (transport, group) = spawn(&launch)
                    .map_err(|e| connect_error(format!("cannot start '{command}': {e}")))?;
                let pid = group.id().and_then(|p| u32::try_from(p).ok());
                let service = handler(config)
                    .serve_with_lifecycle(transport, negotiated())
                    .await
                    .map_err(|e| {
                        connect_error(format!(
                            "'{command}' did not start an MCP session: {}",
                            describe_init(&e)
                        ))
                    })?;
                Ok(Connection::new(service, Some(group), pid, None))
            }
            McpTransport::Http { url, headers } => {
                secrets::register_url(url);
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    secrets::register_header(name, value);
                    let config_error = |message: String| McpError::Config {
                        server: config.name.clone(),
                        message,
                    };
                    let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| config_error(format!("invalid header name '{name}'")))?;
                    // The value is not quoted: it may be a credential.
                    let mut value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| config_error(format!("invalid value for header '{name}'")))?;
                    value.set_sensitive(true);
                    custom.insert(header, value);
                }
                crate::tls::ensure_crypto_provider();
                let http = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let fail = |e: ClientInitializeError| {
                    connect_error(format!("{}: {}", secrets::mask_url(url), describe_init(&e)))
                };
                let mut authorized = None;
                let service = match &config.oauth {
                    None => serve_http(config, || {
                        StreamableHttpClientTransport::from_config(http.clone())
                    })
                    .await
                    .map_err(fail)?,
                    Some(oauth) => {
                        let oauth_error =
                            |m: String| connect_error(format!("{}: {m}", secrets::mask_url(url)));
                        let unauthorized = AuthorizationManager::new(url.as_str())
                            .await
                            .map_err(|e| oauth_error(format!("cannot start OAuth: {e}")))?;
                        let client = AuthClient::new(reqwest::Client::new(), unauthorized);
                        let first = serve_http(config, || {
                            StreamableHttpClientTransport::with_client(client.clone(), http.clone())
                        })
                        .await;
                        match first {
                            Ok(service) => {
                                authorized = Some(client);
                                service
                            }
                            Err(e) => {
                                // Authorized only when the server asks (401).
                                let Some(challenge) = e.auth_challenge().map(str::to_string) else {
                                    return Err(fail(e));
                                };
                                let manager = oauth
                                    .run(url, Some(&challenge))
                                    .await
                                    .map_err(oauth_error)?;
                                let client = AuthClient::new(reqwest::Client::new(), manager);
                                authorized = Some(client.clone());
                                serve_http(config, || {
                                    StreamableHttpClientTransport::with_client(
                                        client.clone(),
                                        http.clone(),
                                    )
                                })
                                .await
                                .map_err(fail)?
                            }
                        }
                    }
                };
                Ok(Connection::new(service, None, None, authorized))
            }
        }
    }

    fn new(
        service: RunningService<RoleClient, Handler>,
        group: Option<ProcessGroup>,
        pid: Option<u32>,
        oauth: Option<AuthClient<reqwest::Client>>,
    ) -> Self {
        let version = service
            .peer()
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        tracing::debug!(server = %service.service().server(), protocol = %version, "MCP server connected");
        Connection {
            peer: service.peer().clone(),
            handler: service.service().clone(),
            service: Mutex::new(Some(service)),
            group: Mutex::new(group),
            pid,
            hung: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            oauth,
        }
    }

    /// The protocol revision the server and troupe agreed on
    /// (`2026-07-28`: stateless; earlier: a session).
    pub(super) fn protocol(&self) -> String {
        self.peer
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default()
    }

    /// Whether the connection is gone (closed, or the server went away).
    pub(super) fn is_closed(&self) -> bool {
        self.broken.load(Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    /// Runs one request (made by `make`) under the timeout, naming
    /// failures clearly. A request an OAuth server refused for want of
    /// authorization (401, or 403 `insufficient_scope`) is made again,
    /// once, after authorizing again.
    pub(super) async fn request<T, F, Fut>(
        &self,
        config: &McpServerConfig,
        operation: &str,
        make: F,
    ) -> Result<T, McpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let disconnected = |message: String| {
            self.broken.store(true, Ordering::SeqCst);
            McpError::Disconnected {
                server: config.name.clone(),
                operation: operation.to_string(),
                message: secrets::redact(&message).into_owned(),
            }
        };
        let refused = |message: String| McpError::Server {
            server: config.name.clone(),
            operation: operation.to_string(),
            message: secrets::redact(&message).into_owned(),
        };
        if self.is_closed() {
            return Err(disconnected("the connection is closed".into()));
        }
        let mut answer = tokio::time::timeout(config.timeout, make()).await;
        if let Ok(Err(e)) = &answer
            && let Some(challenge) = Challenge::of(e)
            && let (Some(client), Some(oauth), McpTransport::Http { url, .. }) =
                (&self.oauth, &config.oauth, &config.transport)
        {
            tracing::debug!(server = %config.name, operation, "authorizing again");
            oauth
                .reauthorize(url, client, challenge)
                .await
                .map_err(|m| refused(format!("authorizing again failed: {m}")))?;
            answer = tokio::time::timeout(config.timeout, make()).await;
        }
        if matches!(answer, Err(_) | Ok(Err(ServiceError::Timeout { .. }))) {
            self.hung.store(true, Ordering::SeqCst);
        }
        match answer {
            Err(_) => Err(McpError::Timeout {
                server: config.name.clone(),
                operation: operation.to_string(),
                after: config.timeout,
            }),
            Ok(Ok(value)) => Ok(value),
            // A Rust server's message may name Rust types: put as JSON kinds.
            Ok(Err(ServiceError::McpError(e))) => Err(refused(readable(&e.message))),
            Ok(Err(ServiceError::Timeout { timeout })) => Err(McpError::Timeout {
                server: config.name.clone(),
                operation: operation.to_string(),
                after: timeout,
            }),
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                Err(disconnected(describe_service(&e)))
            }
            Ok(Err(e)) if self.is_closed() => Err(disconnected(describe_service(&e))),
            Ok(Err(e)) => Err(refused(describe_service(&e))),
        }
    }

    /// Closes the session: a stdio server is asked to exit (its stdin
    /// closed), then terminated, then killed, and its whole process group
    /// is killed after it. A server that left a request unanswered past its
    /// timeout is killed first: asked to exit, a hung server would hold
    /// the close for the seconds rmcp waits for a graceful exit.
    pub(super) async fn close(&self) {
        if self.hung.load(Ordering::SeqCst) {
            self.kill();
        }
        // The locks are held only to take the values out: a poisoned lock
        // still holds either the value or nothing, both fine to take.
        let service = self
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(Duration::from_secs(10)).await;
        }
        self.kill();
    }

    /// Kills a stdio server's process group at once.
    pub(super) fn kill(&self) {
        let group = self.group.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut group) = group {
            group.kill();
        }
    }
}

/// Serves the session over the HTTP transports `transport` makes:
/// `server/discover` first; a session-era server that cannot take it
/// without a session (an HTTP error rather than a JSON-RPC one) is asked
/// again with `initialize`.
async fn serve_http<C>(
    config: &McpServerConfig,
    transport: impl Fn() -> StreamableHttpClientTransport<C>,
) -> Result<RunningService<RoleClient, Handler>, ClientInitializeError>
where
    C: StreamableHttpClient + Send + Sync + 'static,
{
    match handler(config)
        .serve_with_lifecycle(transport(), negotiated())
        .await
    {
        Ok(service) => Ok(service),
        // The server asks for authorization: the caller authorizes first.
        Err(first) if first.auth_challenge().is_some() => Err(first),
        Err(first) => {
            tracing::debug!(server = %config.name, error = %describe_init(&first), "server/discover failed; trying initialize");
            handler(config).serve(transport()).await
        }
    }
}

/// How the failure of a request that never reached the server begins.
pub(super) const NOT_SENT: &str = "cannot send the request";

/// troupe's side of a new connection to the server of `config`.
fn handler(config: &McpServerConfig) -> Handler {
    Handler::new(&config.name, config.sampling)
}

/// Both eras, negotiated: `server/discover` offering 2026-07-28 (then
/// 2025-11-25), and a server that answers it with a JSON-RPC error (a
/// session-era server) gets the 2025-11-25 `initialize` handshake.
fn negotiated() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// A request's failure in words: the transport's own error, without the
/// Rust type rmcp names it by.
fn describe_service(e: &ServiceError) -> String {
    match e {
        ServiceError::TransportSend(t) => format!("{NOT_SENT}: {}", t.error),
        ServiceError::TransportClosed => "the connection closed".into(),
        ServiceError::McpError(e) => e.message.to_string(),
        ServiceError::Cancelled { reason } => match reason {
            Some(r) => format!("the request was cancelled: {r}"),
            None => "the request was cancelled".into(),
        },
        ServiceError::UnexpectedResponse => "the server answered with something else".into(),
        other => strip_type_names(&other.to_string()),
    }
}

/// An initialization's failure in words.
fn describe_init(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => {
            "the connection closed before the server answered `initialize`".into()
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", error.error)
        }
        ClientInitializeError::JsonRpcError(e) => {
            format!("the server refused `initialize`: {}", e.message)
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server did not answer `initialize` as MCP requires".into()
        }
        other => strip_type_names(&other.to_string()),
    }
}

/// `text` without rmcp's `Transport [some::rust::Type] error: ` prefixes.
fn strip_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("Transport [") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        match after.find("] error: ") {
            Some(end) => rest = &after[end + "] error: ".len()..],
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::strip_type_names;

    #[test]
    fn rust_type_names_are_stripped() {
        assert_eq!(
            strip_type_names(
                "Send message error Transport [rmcp::transport::child_process::TokioChildProcess] error: Broken pipe, when send initialize"
            ),
            "Send message error Broken pipe, when send initialize"
        );
        assert_eq!(strip_type_names("plain"), "plain");
    }
}
