//! MCP tools: a client of a Model Context Protocol server (over stdio to a
//! child process, or streamable HTTP), built on the official `rmcp` crate,
//! whose tools become [`Tool`](crate::Tool)s.
//!
//! What a stdio server is allowed: a minimal environment plus what its
//! configuration passes (`env`), a process group of its own that is killed
//! whole, a startup and a request timeout, and a number of restarts.
//!
//! - `config`: [`McpServerConfig`], [`McpTransport`];
//! - `env`: the environment a stdio server starts with;
//! - `process`: its process group and the guard that kills it;
//! - `reaper`: the helpers that kill its whole tree when the client dies;
//! - `connection`: one session, its timeouts and its errors in words;
//! - `client`: [`McpClient`], restarts and the allow-list;
//! - `oauth`: [`McpOAuth`], authorizing with an OAuth-protected server;
//! - `tool`: [`McpTool`].

mod call;
mod client;
mod config;
mod connection;
mod elicit;
mod env;
mod handler;
mod oauth;
mod process;
pub mod reaper;
mod tool;

use serde_json::Value;

pub use client::McpClient;
pub use config::{McpServerConfig, McpTransport};
pub use env::MINIMAL_ENV;
pub use oauth::{Authorize, Authorized, McpOAuth};
pub use process::kill_mcp_servers;
pub use tool::McpTool;

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
    /// The action's memory (seed 003, pattern 6): a short note kept beside
    /// the raw result, from the result's `_meta["troupe/memory"]` (a
    /// string), else its `structuredContent.memory` (a string).
    pub memory: Option<String>,
}

/// The `_meta` key of a tool result that carries the action's memory.
pub const MEMORY_META_KEY: &str = "troupe/memory";
