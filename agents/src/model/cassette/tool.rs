//! Tool calls through a cassette (MCP tools' `tools/call` included):
//! recorded with what they returned, or answered from the recording
//! without running the tool (no process started, nothing fetched). Keyed
//! by the calling turn's path; matched as model calls are (by the tool
//! and its arguments). A call not recorded — another tool, other
//! arguments, one call too many — stops the run ([`ToolError::Fatal`])
//! naming the agent path and the call.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::matching::Recorded;
use super::tape::Kind;
use super::{Cassette, ToolEntry};
use crate::error::ToolError;
use crate::model::ToolDefinition;
use crate::tool::{Tool, ToolContext, ToolOutput};

impl Recorded for ToolEntry {
    fn agent(&self) -> &str {
        &self.agent
    }
    fn call(&self) -> u64 {
        self.call
    }
    fn request(&self) -> serde_json::Value {
        serde_json::json!({"tool": self.tool, "arguments": self.arguments})
    }
}

impl Cassette {
    /// `tool` as agent `agent` calls it, through this cassette; `server`
    /// names the MCP server answering it, for an MCP tool.
    pub fn wrap_tool(
        self: &Arc<Self>,
        agent: &str,
        tool: Arc<dyn Tool>,
        server: Option<&str>,
    ) -> Arc<dyn Tool> {
        Arc::new(CassetteTool {
            inner: tool,
            agent: agent.to_string(),
            server: server.map(str::to_string),
            cassette: self.clone(),
        })
    }
}

/// A tool behind a cassette, for one agent.
struct CassetteTool {
    inner: Arc<dyn Tool>,
    agent: String,
    server: Option<String>,
    cassette: Arc<Cassette>,
}

/// What a recorded entry answers.
fn answer(entry: &ToolEntry) -> Result<ToolOutput, ToolError> {
    match (&entry.output, &entry.error) {
        (Some(content), _) => Ok(ToolOutput {
            content: content.clone(),
            memory: entry.memory.clone(),
        }),
        (None, Some(e)) => Err(ToolError::Failed(e.clone())),
        (None, None) => Err(ToolError::Fatal(format!(
            "cassette: agent `{}` tool call {} has neither a result nor an error",
            entry.agent, entry.call
        ))),
    }
}

#[async_trait]
impl Tool for CassetteTool {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    fn needs_approval(&self) -> bool {
        self.inner.needs_approval()
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = match ctx.run.path() {
            p if p.is_empty() => self.agent.clone(),
            p => p.to_string(),
        };
        let tape = self
            .cassette
            .tape(ctx.run.run_id().map(|r| &**r))
            .map_err(|e| ToolError::Fatal(e.to_string()))?;
        let call = tape.take_index(Kind::Tools, &path);
        let name = self.inner.definition().name.clone();
        let redacted = self.cassette.redact_text(arguments);
        if let Some((mode, recorded)) = &self.cassette.replay {
            let now = serde_json::json!({"tool": name, "arguments": redacted});
            let entry = tape
                .pick(
                    Kind::Tools,
                    &recorded.tools,
                    &path,
                    &self.agent,
                    call,
                    &now,
                    *mode,
                )
                .map_err(ToolError::Fatal)?;
            return answer(entry);
        }
        let t0 = Instant::now();
        let result = self.inner.call(arguments, ctx).await;
        let entry = ToolEntry {
            agent: path,
            call,
            tool: name,
            server: self.server.clone(),
            arguments: redacted,
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            output: result.as_ref().ok().map(|o| o.content.clone()),
            memory: result.as_ref().ok().and_then(|o| o.memory.clone()),
            error: result.as_ref().err().map(ToString::to_string),
        };
        tape.append(Kind::Tools, &entry, &self.cassette.secrets())
            .map_err(|e| ToolError::Fatal(e.to_string()))?;
        result
    }
}
