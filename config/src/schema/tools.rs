//! `tools:` of an agent: built-in tools by name, and MCP servers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::HumanDuration;

/// A tool an agent may call: a built-in one by name, or an MCP server's.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolSpec {
    /// `calculator`: evaluates arithmetic (`+ - * / % ^`, parentheses).
    Calculator,
    /// `current_time`: the current UTC date and time (RFC 3339).
    CurrentTime,
    /// `word_count`: counts the words, lines and characters of a text.
    WordCount,
    /// The tools of an MCP server.
    Mcp(Box<McpSpec>),
}

/// An MCP server: a child process over stdio (`command`) or a
/// streamable-HTTP endpoint (`url`). Strings expand `${VAR}` and
/// `${VAR:-default}`; `${TROUPE_EXE}` is the running `troupe` binary.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpSpec {
    /// A name for the server (in errors and events); default `mcp`.
    #[serde(default)]
    pub name: Option<String>,
    /// stdio: the program to run.
    #[serde(default)]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables to add.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: its working directory (relative to the config file).
    #[serde(default)]
    pub cwd: Option<String>,
    /// HTTP: the endpoint, e.g. `http://127.0.0.1:8000/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP: headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The only tools to expose (all when absent).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Prefix for the tool names the model sees (`<prefix>_<tool>`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Time allowed for each request (default 30s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
}
