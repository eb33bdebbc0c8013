//! [`McpClient`]: a session with an MCP server that lists and calls its
//! tools, restarts a stdio server that exited (as often as allowed), and
//! checks the allow-list against what the server offers.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, ContentBlock, ResourceContents};
use serde_json::Value;
use troupe_runtime::secrets;

use super::call::{Driven, drive};
use super::config::{McpServerConfig, McpTransport};
use super::connection::Connection;
use super::{McpCallResult, McpToolInfo};
use crate::error::McpError;

/// How many times in a row a dropped HTTP server is tried again.
const RECONNECTS: u32 = 8;

struct Shared {
    config: McpServerConfig,
    /// The live connection; replaced when a stdio server is restarted.
    current: Mutex<Arc<Connection>>,
    /// Held while a restart is under way, so concurrent calls that find
    /// the server gone restart it once.
    restarting: tokio::sync::Mutex<()>,
    restarts_used: AtomicU32,
    reconnects: AtomicU32,
    /// Set by [`McpClient::close`]: no restart after it.
    closed: AtomicBool,
}

/// A connection to an MCP server. Cheap to clone; the connection closes
/// (and a stdio server's whole process group is killed) when the last
/// clone and the last tool made from it are dropped, or on
/// [`McpClient::close`].
///
/// Every request has a timeout, and so has startup; a server that hangs
/// gives a clear [`McpError`], never a hang. A stdio server that exits or
/// crashes is started again on the next call, up to
/// [`McpServerConfig::restarts`] times (a call cut off by the crash is not
/// replayed: it fails, saying the server was restarted); after that its
/// tools fail with [`McpError::Unavailable`].
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
    shared: Arc<Shared>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("config", &self.shared.config)
            .field("pid", &self.process_id())
            .finish()
    }
}

impl McpClient {
    /// Starts (stdio) or reaches (HTTP) the server and initializes the
    /// session, within the startup timeout.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        let connection = Connection::open(&config).await?;
        Ok(McpClient {
            shared: Arc::new(Shared {
                config,
                current: Mutex::new(Arc::new(connection)),
                restarting: tokio::sync::Mutex::new(()),
                restarts_used: AtomicU32::new(0),
                reconnects: AtomicU32::new(0),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    pub(super) fn config(&self) -> &McpServerConfig {
        &self.shared.config
    }

    fn current(&self) -> Arc<Connection> {
        // The lock only guards swapping an Arc: a poisoned one still holds
        // a connection.
        self.shared
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The child process's id (stdio servers): the current one, after a
    /// restart. It leads the server's process group.
    pub fn process_id(&self) -> Option<u32> {
        self.current().pid
    }

    /// How many times the server was restarted.
    pub fn restarts(&self) -> u32 {
        self.shared.restarts_used.load(Ordering::SeqCst)
    }

    /// Whether the connection is gone (closed, or the server went away and
    /// was not restarted yet).
    pub fn is_closed(&self) -> bool {
        self.current().is_closed()
    }

    /// The connection to use: the current one, or a restarted server's
    /// when the current one is gone.
    async fn live(&self, operation: &str) -> Result<Arc<Connection>, McpError> {
        let connection = self.current();
        if !connection.is_closed() {
            return Ok(connection);
        }
        self.restart(&connection, operation).await
    }

    /// Starts a stdio server again in place of `dead`, if restarts are
    /// left (once for all the calls that found it gone).
    async fn restart(
        &self,
        dead: &Arc<Connection>,
        operation: &str,
    ) -> Result<Arc<Connection>, McpError> {
        let config = &self.shared.config;
        let _restarting = self.shared.restarting.lock().await;
        let now = self.current();
        if !Arc::ptr_eq(&now, dead) && !now.is_closed() {
            return Ok(now);
        }
        let gone = |message: &str| McpError::Disconnected {
            server: config.name.clone(),
            operation: operation.to_string(),
            message: message.to_string(),
        };
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(gone("the client was closed"));
        }
        if matches!(config.transport, McpTransport::Http { .. }) {
            return self.reconnect(dead, operation).await;
        }
        let used = self.shared.restarts_used.load(Ordering::SeqCst);
        if used >= config.restarts {
            return Err(McpError::Unavailable {
                server: config.name.clone(),
                restarts: used,
            });
        }
        self.shared.restarts_used.store(used + 1, Ordering::SeqCst);
        // Whatever the dead server left running in its group goes first.
        dead.kill();
        tracing::warn!(server = %config.name, restart = used + 1, of = config.restarts, "MCP server exited; restarting it");
        let fresh = Arc::new(Connection::open(config).await?);
        *self
            .shared
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = fresh.clone();
        Ok(fresh)
    }

    /// Reaches an HTTP server that dropped again, in place of `dead`:
    /// up to [`RECONNECTS`] tries, waiting 100 ms, 200 ms, 400 ms… (at
    /// most 2 s) between them. (Called with the restart lock held.)
    async fn reconnect(
        &self,
        dead: &Arc<Connection>,
        operation: &str,
    ) -> Result<Arc<Connection>, McpError> {
        let config = &self.shared.config;
        dead.close().await;
        let mut wait = std::time::Duration::from_millis(100);
        let mut last = None;
        for attempt in 1..=RECONNECTS {
            tracing::warn!(server = %config.name, attempt, of = RECONNECTS, "MCP server dropped; reconnecting");
            match Connection::open(config).await {
                Ok(fresh) => {
                    let fresh = Arc::new(fresh);
                    *self
                        .shared
                        .current
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = fresh.clone();
                    self.shared.reconnects.fetch_add(1, Ordering::SeqCst);
                    return Ok(fresh);
                }
                Err(e) => last = Some(e),
            }
            if attempt < RECONNECTS {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(2));
            }
        }
        Err(McpError::Disconnected {
            server: config.name.clone(),
            operation: operation.to_string(),
            message: format!(
                "the server dropped and {RECONNECTS} reconnections failed, the last: {}",
                last.map(|e| e.to_string()).unwrap_or_default()
            ),
        })
    }

    /// How many times an HTTP server that dropped was reached again.
    pub fn reconnects(&self) -> u32 {
        self.shared.reconnects.load(Ordering::SeqCst)
    }

    /// The server's tools (only the allowed ones, if an allow-list is
    /// set). An allow-list naming a tool the server does not offer is
    /// [`McpError::UnknownTools`].
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let config = &self.shared.config;
        let connection = self.live("tools/list").await?;
        let tools = connection
            .request(config, "tools/list", || connection.peer.list_all_tools())
            .await?;
        if let Some(allow) = &config.allow {
            let unknown: Vec<String> = allow
                .iter()
                .filter(|a| !tools.iter().any(|t| t.name == a.as_str()))
                .cloned()
                .collect();
            if !unknown.is_empty() {
                return Err(McpError::UnknownTools {
                    server: config.name.clone(),
                    unknown,
                    offered: tools.iter().map(|t| t.name.to_string()).collect(),
                });
            }
        }
        Ok(tools
            .into_iter()
            .filter(|t| config.allows(&t.name))
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments` (a JSON object, or null for none),
    /// outside any agent: a question of the server (elicitation) ends it
    /// with [`McpError::InputNeeded`], and its sampling is refused.
    /// Registered secrets are masked in the result.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<McpCallResult, McpError> {
        self.call_tool_in(tool, arguments, None).await
    }

    /// The protocol revision the server and troupe agreed on: `2026-07-28`
    /// (stateless, `server/discover`) or an earlier one (a session).
    pub fn protocol(&self) -> String {
        self.current().protocol()
    }

    /// Calls `tool` for a tool call of an agent (`ctx`): the server's
    /// progress becomes events of the call, its elicitation a question to
    /// the user (answered from `ctx.answers`, else
    /// [`McpError::InputNeeded`]), its sampling the agent's model's (when
    /// allowed); a cancelled run cancels the call on the server.
    pub async fn call_tool_in(
        &self,
        tool: &str,
        arguments: Value,
        ctx: Option<&crate::tool::ToolContext>,
    ) -> Result<McpCallResult, McpError> {
        let config = &self.shared.config;
        if !config.allows(tool) {
            return Err(McpError::NotAllowed {
                server: config.name.clone(),
                tool: tool.to_string(),
            });
        }
        let operation = format!("tools/call {tool}");
        let mut params = CallToolRequestParams::new(tool.to_string());
        match arguments {
            Value::Object(map) => params.arguments = Some(map),
            Value::Null => {}
            other => {
                return Err(McpError::Server {
                    server: config.name.clone(),
                    operation,
                    message: format!("the arguments must be a JSON object, not {other}"),
                });
            }
        }
        // A request an HTTP server never received (it was down) is sent
        // again, once, after reconnecting.
        let mut resent = false;
        let result = loop {
            let connection = self.live(&operation).await?;
            // Progress is reported under the name the model knows.
            let shown = match &config.tool_prefix {
                Some(prefix) => format!("{prefix}_{tool}"),
                None => tool.to_string(),
            };
            let scope = connection.handler.begin(&shown, ctx);
            let run = ctx.map(|c| c.run.clone()).unwrap_or_default();
            let driven = connection
                .request(config, &operation, || {
                    drive(&connection, &scope, params.clone(), &run)
                })
                .await;
            connection.handler.end(&scope);
            match driven {
                Ok(Driven::Done(result)) => break result,
                Ok(Driven::Asked(question)) => {
                    return Err(McpError::InputNeeded {
                        server: config.name.clone(),
                        question,
                    });
                }
                Ok(Driven::Cancelled) => {
                    return Err(McpError::Cancelled {
                        server: config.name.clone(),
                        tool: tool.to_string(),
                    });
                }
                Err(McpError::Disconnected {
                    server,
                    operation,
                    message,
                }) => {
                    let http = matches!(config.transport, McpTransport::Http { .. });
                    // The HTTP request failed before any answer (the server
                    // was down), not with an HTTP status: it never ran.
                    let unsent = message.starts_with(super::connection::NOT_SENT)
                        && message.contains("error sending request");
                    let resend = unsent && !resent;
                    if http && !resend {
                        // Not held up by reconnecting: the next call does.
                        return Err(McpError::Disconnected {
                            server,
                            operation,
                            message: format!("{message}; troupe reconnects to it on the next call"),
                        });
                    }
                    // The server died under the call. Not replayed (it may
                    // have done something already), unless it never got it:
                    // started again (or reconnected) for the next one.
                    let next = match self.restart(&connection, &operation).await {
                        Ok(_) if http && resend => {
                            resent = true;
                            continue;
                        }
                        Ok(_) => "the server was restarted, so the call may be tried again".into(),
                        Err(McpError::Unavailable { restarts, .. }) => format!(
                            "it is not started again (restarted {restarts} time(s), as many as allowed)"
                        ),
                        Err(e) => format!("restarting it failed: {e}"),
                    };
                    return Err(McpError::Disconnected {
                        server,
                        operation,
                        message: format!("{message}; {next}"),
                    });
                }
                Err(e) => return Err(e),
            }
        };
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
        let memory = result
            .meta
            .as_ref()
            .and_then(|m| m.0.get(super::MEMORY_META_KEY))
            .or_else(|| result.structured_content.as_ref()?.get("memory"))
            .and_then(|v| v.as_str())
            .map(|m| secrets::redact(m).into_owned());
        Ok(McpCallResult {
            text: secrets::redact(&text).into_owned(),
            is_error: result.is_error.unwrap_or(false),
            memory,
        })
    }

    /// Closes the connection; a stdio server is asked to exit, then
    /// killed with its whole process group. Tools made from this client
    /// fail from then on.
    pub async fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.current().close().await;
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
