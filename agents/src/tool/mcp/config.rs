//! [`McpServerConfig`]: how to reach an MCP server, what of troupe's
//! environment a stdio server sees, and the limits it runs under.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::oauth::McpOAuth;

/// How to reach an MCP server.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout, in a process
    /// group of its own.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set in its environment (over the minimal one and
        /// `inherit_env`).
        env: Vec<(String, String)>,
        /// Variables of troupe's environment passed on as they are, beside
        /// the minimal set every server gets
        /// ([`MINIMAL_ENV`](super::MINIMAL_ENV)).
        inherit_env: Vec<String>,
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
                inherit_env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("inherit_env", inherit_env)
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &troupe_runtime::secrets::mask_url(url))
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
/// A stdio server runs in a process group of its own, with a minimal
/// environment ([`MINIMAL_ENV`](super::MINIMAL_ENV)) plus the variables
/// [`inherit_env`](Self::inherit_env) names and [`env`](Self::env) sets —
/// never an API key it was not given. Its whole group is killed when the
/// client closes, is dropped, or startup fails.
///
/// ```
/// use std::time::Duration;
/// use troupe_agents::McpServerConfig;
///
/// let files = McpServerConfig::stdio("files", "npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
///     .inherit_env(["NPM_CONFIG_REGISTRY"])
///     .allow(["read_file", "list_directory"])
///     .timeout(Duration::from_secs(20))
///     .startup_timeout(Duration::from_secs(60))
///     .restarts(2);
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
    /// The only tools to expose and allow calls of (all when `None`). A
    /// name the server does not offer is an error when the tools are
    /// listed.
    pub allow: Option<Vec<String>>,
    /// A prefix for the tool names the model sees (`<prefix>_<tool>`), so
    /// two servers' tools of one name can coexist.
    pub tool_prefix: Option<String>,
    /// Time allowed for each request (listing, a tool call), and for
    /// startup unless `startup_timeout` is set. Default 30 s.
    pub timeout: Duration,
    /// Time allowed to start the server and initialize the connection
    /// (default: `timeout`).
    pub startup_timeout: Option<Duration>,
    /// How many times a stdio server that exits or crashes is started
    /// again before its tools fail for good. Default 1.
    pub restarts: u32,
    /// Whether the server's sampling requests are answered by the calling
    /// agent's model (metered like its other calls). Default false: they
    /// are refused.
    pub sampling: bool,
    /// OAuth with the server (HTTP only): authorized when it answers 401,
    /// its token then sent with every request.
    pub oauth: Option<McpOAuth>,
}

impl McpServerConfig {
    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            allow: None,
            tool_prefix: None,
            timeout: Duration::from_secs(30),
            startup_timeout: None,
            restarts: 1,
            sampling: false,
            oauth: None,
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
                inherit_env: Vec::new(),
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

    /// Passes these variables of troupe's environment on to the child
    /// process, when set (stdio only). Nothing else of troupe's environment
    /// reaches it beyond the minimal set.
    pub fn inherit_env<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        if let McpTransport::Stdio { inherit_env, .. } = &mut self.transport {
            inherit_env.extend(names.into_iter().map(Into::into));
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

    /// Sets the time allowed for each request, and for startup unless
    /// [`startup_timeout`](Self::startup_timeout) is set.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time allowed to start the server and initialize the
    /// connection.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// Sets how many times a stdio server that exits or crashes is started
    /// again (0: never).
    pub fn restarts(mut self, restarts: u32) -> Self {
        self.restarts = restarts;
        self
    }

    /// Lets the server's sampling requests be answered by the calling
    /// agent's model.
    pub fn sampling(mut self, allowed: bool) -> Self {
        self.sampling = allowed;
        self
    }

    /// Authorizes with the server by OAuth when it asks (HTTP only).
    pub fn oauth(mut self, oauth: McpOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// The time allowed for startup.
    pub(super) fn startup_limit(&self) -> Duration {
        self.startup_timeout.unwrap_or(self.timeout)
    }

    pub(super) fn allows(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
    }
}
