//! MCP tools: a client of a Model Context Protocol server (over stdio to a
//! child process, or streamable HTTP), built on the official `rmcp` crate,
//! whose tools become [`Tool`]s.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput, parse_arguments};
use crate::error::{McpError, ToolError};
use crate::model::ToolDefinition;

/// How to reach an MCP server.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: Vec<(String, String)>,
        /// Its working directory (the caller's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A server at a streamable-HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Environment and header values may be credentials: names only.
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
                .finish(),
        }
    }
}

/// Describes an MCP server to connect to.
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::McpServerConfig;
///
/// let files = McpServerConfig::stdio("files", "npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
///     .allow(["read_file", "list_directory"])
///     .timeout(Duration::from_secs(20));
/// let search = McpServerConfig::http("search", "http://127.0.0.1:8000/mcp")
///     .header("x-team", "docs")
///     .tool_prefix("search");
/// ```
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// A name for the server (in errors and events).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The only tools to expose and allow calls of (all when `None`).
    pub allow: Option<Vec<String>>,
    /// A prefix for the tool names the model sees (`<prefix>_<tool>`), so
    /// two servers' tools of one name can coexist.
    pub tool_prefix: Option<String>,
    /// Time allowed for each request (listing, a tool call). Default 30 s.
    pub timeout: Duration,
    /// Time allowed to start and initialize the connection. Default 20 s.
    pub connect_timeout: Duration,
}

impl McpServerConfig {
    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            allow: None,
            tool_prefix: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(20),
        }
    }

    /// A server run as a child process: `command`, talking MCP over stdio.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
            },
        )
    }

    /// A server at a streamable-HTTP `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: Vec::new(),
            },
        )
    }

    /// Adds an argument of the child process (stdio only).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments of the child process (stdio only).
    pub fn args<S: Into<String>>(mut self, more: impl IntoIterator<Item = S>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable of the child process (stdio only).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the child's working directory (stdio only).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header sent with every request (HTTP only).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` (HTTP only).
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.header("authorization", format!("Bearer {token}"))
    }

    /// Exposes (and allows calls of) only these tools.
    pub fn allow<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.allow = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Prefixes the tool names the model sees with `<prefix>_`.
    pub fn tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = Some(prefix.into());
        self
    }

    /// Sets the time allowed for each request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time allowed to connect.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    fn allows(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
    }
}

/// A tool an MCP server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    /// The server's name for it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
}

/// What a tool call on an MCP server gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCallResult {
    /// The result's content as text (non-text blocks are described).
    pub text: String,
    /// Whether the server flagged it as an error.
    pub is_error: bool,
}

struct McpInner {
    config: McpServerConfig,
    peer: Peer<RoleClient>,
    /// Held so that dropping the last client closes the connection (and
    /// kills the child); taken by [`McpClient::close`].
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
    pid: Option<u32>,
}

/// A connection to an MCP server. Cheap to clone; the connection closes
/// (and a stdio child is killed and reaped) when the last clone and the
/// last tool made from it are dropped, or on [`McpClient::close`].
///
/// Every request has a timeout; a server that crashes, exits or hangs gives
/// a clear [`McpError`], never a hang.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_agents::{ChatAgent, McpClient, McpServerConfig, ScriptedModel};
///
/// let client = McpClient::connect(McpServerConfig::stdio("time", "mcp-server-time")).await?;
/// let agent = ChatAgent::builder("clock")
///     .model(ScriptedModel::new([]))
///     .tools(client.tools().await?)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<McpInner>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("config", &self.inner.config)
            .field("pid", &self.inner.pid)
            .finish()
    }
}

impl McpClient {
    /// Starts (stdio) or reaches (HTTP) the server and initializes the session.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        let server = config.name.clone();
        let connect_error = |message: String| McpError::Connect {
            server: server.clone(),
            message,
        };
        let initialize_timeout = || McpError::Timeout {
            server: server.clone(),
            operation: "initialize".into(),
            after: config.connect_timeout,
        };
        let (service, pid) =
            match &config.transport {
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let mut cmd = tokio::process::Command::new(command);
                    cmd.args(args);
                    cmd.envs(env.iter().map(|(k, v)| (k, v)));
                    if let Some(dir) = cwd {
                        cmd.current_dir(dir);
                    }
                    // A backstop: rmcp kills the child when the transport goes,
                    // but if that cleanup cannot run the child must not outlive us.
                    cmd.kill_on_drop(true);
                    let (transport, _stderr) = TokioChildProcess::builder(cmd)
                        .stderr(std::process::Stdio::inherit())
                        .spawn()
                        .map_err(|e| connect_error(format!("cannot start '{command}': {e}")))?;
                    let pid = transport.id();
                    let service = tokio::time::timeout(config.connect_timeout, ().serve(transport))
                        .await
                        .map_err(|_| initialize_timeout())?
                        .map_err(|e| connect_error(e.to_string()))?;
                    (service, pid)
                }
                McpTransport::Http { url, headers } => {
                    let mut custom = HashMap::new();
                    for (name, value) in headers {
                        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| McpError::Config {
                                server: server.clone(),
                                message: format!("invalid header name '{name}'"),
                            })?;
                        let mut value =
                            reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                                McpError::Config {
                                    server: server.clone(),
                                    message: format!("invalid value for header '{name}'"),
                                }
                            })?;
                        value.set_sensitive(true);
                        custom.insert(header, value);
                    }
                    crate::tls::ensure_crypto_provider();
                    let transport = StreamableHttpClientTransport::from_config(
                        StreamableHttpClientTransportConfig::with_uri(url.as_str())
                            .custom_headers(custom),
                    );
                    let service = tokio::time::timeout(config.connect_timeout, ().serve(transport))
                        .await
                        .map_err(|_| initialize_timeout())?
                        .map_err(|e| connect_error(format!("{url}: {e}")))?;
                    (service, None)
                }
            };
        Ok(McpClient {
            inner: Arc::new(McpInner {
                peer: service.peer().clone(),
                service: Mutex::new(Some(service)),
                config,
                pid,
            }),
        })
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The child process's id (stdio servers).
    pub fn process_id(&self) -> Option<u32> {
        self.inner.pid
    }

    /// Whether the connection is gone (closed, or the server went away).
    pub fn is_closed(&self) -> bool {
        self.inner.peer.is_transport_closed()
    }

    /// Runs one request under the timeout, naming failures clearly.
    async fn request<T>(
        &self,
        operation: &str,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let config = &self.inner.config;
        let disconnected = |message: String| McpError::Disconnected {
            server: config.name.clone(),
            operation: operation.to_string(),
            message,
        };
        if self.is_closed() {
            return Err(disconnected("the connection is closed".into()));
        }
        match tokio::time::timeout(config.timeout, request).await {
            Err(_) => Err(McpError::Timeout {
                server: config.name.clone(),
                operation: operation.to_string(),
                after: config.timeout,
            }),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(ServiceError::McpError(e))) => Err(McpError::Server {
                server: config.name.clone(),
                operation: operation.to_string(),
                message: e.message.to_string(),
            }),
            Ok(Err(ServiceError::Timeout { timeout })) => Err(McpError::Timeout {
                server: config.name.clone(),
                operation: operation.to_string(),
                after: timeout,
            }),
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                Err(disconnected(e.to_string()))
            }
            Ok(Err(e)) if self.is_closed() => Err(disconnected(e.to_string())),
            Ok(Err(e)) => Err(McpError::Server {
                server: config.name.clone(),
                operation: operation.to_string(),
                message: e.to_string(),
            }),
        }
    }

    /// The server's tools (only the allowed ones, if an allow-list is set).
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let tools = self
            .request("tools/list", self.inner.peer.list_all_tools())
            .await?;
        Ok(tools
            .into_iter()
            .filter(|t| self.inner.config.allows(&t.name))
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// The server's (allowed) tools, as tools an agent can use.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        Ok(self
            .list_tools()
            .await?
            .into_iter()
            .map(|info| McpTool::new(self.clone(), info))
            .collect())
    }

    /// Calls `tool` with `arguments` (a JSON object, or null for none).
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<McpCallResult, McpError> {
        let config = &self.inner.config;
        if !config.allows(tool) {
            return Err(McpError::NotAllowed {
                server: config.name.clone(),
                tool: tool.to_string(),
            });
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        match arguments {
            Value::Object(map) => params.arguments = Some(map),
            Value::Null => {}
            other => {
                return Err(McpError::Server {
                    server: config.name.clone(),
                    operation: format!("tools/call {tool}"),
                    message: format!("arguments must be a JSON object, not {other}"),
                });
            }
        }
        let result = self
            .request(
                &format!("tools/call {tool}"),
                self.inner.peer.call_tool(params),
            )
            .await?;
        let mut text = result
            .content
            .iter()
            .map(block_text)
            .collect::<Vec<_>>()
            .join("\n");
        if text.is_empty()
            && let Some(structured) = &result.structured_content
        {
            text = structured.to_string();
        }
        Ok(McpCallResult {
            text,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// Closes the connection; a stdio child is asked to exit, then killed,
    /// and reaped. Tools made from this client fail from then on.
    pub async fn close(&self) {
        // The lock is held only to take the service out: a poisoned lock
        // still holds either the service or nothing, both fine to take.
        let service = self
            .inner
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut service) = service {
            // rmcp waits for the child to exit (up to a few seconds) and
            // kills it if it does not.
            let _ = service.close_with_timeout(Duration::from_secs(10)).await;
        }
    }
}

/// A content block as text: text as it is, other kinds described.
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}]", i.mime_type),
        ContentBlock::Audio(a) => format!("[audio: {}]", a.mime_type),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, .. } => format!("[resource: {uri}]"),
            _ => "[resource]".to_string(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        _ => "[unsupported content]".to_string(),
    }
}

/// One tool of an MCP server, usable by an agent.
#[derive(Debug, Clone)]
pub struct McpTool {
    client: McpClient,
    remote_name: String,
    definition: ToolDefinition,
}

impl McpTool {
    fn new(client: McpClient, info: McpToolInfo) -> Self {
        let name = match &client.inner.config.tool_prefix {
            Some(prefix) => format!("{prefix}_{}", info.name),
            None => info.name.clone(),
        };
        McpTool {
            definition: ToolDefinition {
                name,
                description: info.description,
                parameters: info.input_schema,
            },
            remote_name: info.name,
            client,
        }
    }

    /// The server's name for the tool (without any prefix).
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Calls the tool; a result the server flags as an error, and a server
    /// that fails, hangs or is gone, come back as tool errors.
    async fn call(&self, arguments: &str, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let value = parse_arguments(&self.definition.name, arguments)?;
        if !value.is_object() {
            return Err(ToolError::InvalidArguments {
                tool: self.definition.name.clone(),
                message: "the arguments must be a JSON object".into(),
            });
        }
        let result = self
            .client
            .call_tool(&self.remote_name, value)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if result.is_error {
            Err(ToolError::Failed(result.text))
        } else {
            Ok(ToolOutput::text(result.text))
        }
    }
}
