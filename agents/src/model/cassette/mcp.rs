//! MCP servers through a cassette: the tool list each server gave
//! (`tools/list`) kept in `mcp_servers.jsonl`, one line per server of each
//! agent, so that a replay builds the agent's tools from it — no process
//! started, no connection made. Their calls (`tools/call`) are tool calls
//! (`tool_calls.jsonl`, with the server named). Lists are keyed by the
//! agent's name in its config and the server's name: they are taken when
//! the team is built, before any run, and an agent has the same tools
//! wherever it runs.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::Cassette;
use super::file::CassetteError;
use super::tape::Kind;
use crate::error::ToolError;
use crate::model::ToolDefinition;
use crate::tool::{Tool, ToolContext, ToolOutput};

/// One MCP server's tools as an agent saw them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerEntry {
    /// The agent (its name in the config).
    pub agent: String,
    /// The server's name.
    pub server: String,
    /// How it was reached, as written in the config (`command`, `args`,
    /// `url`; the names of its environment variables and headers, their
    /// values `[REDACTED]`): for the reader, not matched.
    #[serde(default)]
    pub transport: serde_json::Value,
    /// Its tools, after the entry's allow-list and prefix.
    pub tools: Vec<McpToolEntry>,
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolEntry {
    /// Its name on the server.
    pub remote_name: String,
    /// The tool as the model sees it.
    #[serde(flatten)]
    pub definition: ToolDefinition,
}

impl Cassette {
    /// Keeps an MCP server's tool list (recording; nothing when
    /// replaying).
    pub fn record_mcp_server(&self, entry: McpServerEntry) -> Result<(), CassetteError> {
        if self.replays() {
            return Ok(());
        }
        let tapes: Vec<_> = self
            .tapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let secrets = self.secrets();
        for tape in tapes {
            tape.append(Kind::Servers, &entry, &secrets)?;
        }
        self.servers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry);
        Ok(())
    }

    /// The tools server `server` of agent `agent` gave when recorded
    /// (replaying; `None` when recording or not recorded): tools that are
    /// answered only from the cassette.
    pub fn mcp_server(&self, agent: &str, server: &str) -> Option<Vec<ReplayedTool>> {
        let (_, recorded) = self.replay.as_ref()?;
        let entry = recorded
            .servers
            .iter()
            .find(|e| e.agent == agent && e.server == server)?;
        Some(
            entry
                .tools
                .iter()
                .map(|t| ReplayedTool {
                    server: server.to_string(),
                    remote_name: t.remote_name.clone(),
                    definition: t.definition.clone(),
                })
                .collect(),
        )
    }

    /// The MCP servers recorded (replaying), as `agent/server`.
    pub fn mcp_servers(&self) -> Vec<String> {
        self.replay.as_ref().map_or_else(Vec::new, |(_, r)| {
            r.servers
                .iter()
                .map(|e| format!("{}/{}", e.agent, e.server))
                .collect()
        })
    }
}

/// A tool of a recorded MCP server: its definition, and no server behind
/// it — its calls are answered by the cassette wrapped around it
/// ([`Cassette::wrap_tool`]); called unwrapped, it fails.
#[derive(Debug, Clone)]
pub struct ReplayedTool {
    server: String,
    remote_name: String,
    definition: ToolDefinition,
}

impl ReplayedTool {
    /// Its name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

#[async_trait]
impl Tool for ReplayedTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, _arguments: &str, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Fatal(format!(
            "cassette: tool `{}` of MCP server `{}` is answered only from a cassette",
            self.definition.name, self.server
        )))
    }
}
