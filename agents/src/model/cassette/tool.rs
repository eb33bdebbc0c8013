//! Tool calls through a cassette: recorded with what they returned, or
//! answered from the recording without running the tool (no process
//! started, nothing fetched). A call not recorded — another tool, other
//! arguments, one call too many — stops the run ([`ToolError::Fatal`])
//! naming the agent and the call.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::{Cassette, Mode, ToolEntry, take};
use crate::error::ToolError;
use crate::model::ToolDefinition;
use crate::tool::{Tool, ToolContext, ToolOutput};

impl Cassette {
    /// `tool` as agent `agent` calls it, through this cassette.
    pub fn wrap_tool(self: &Arc<Self>, agent: &str, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        Arc::new(CassetteTool {
            inner: tool,
            agent: agent.to_string(),
            cassette: self.clone(),
        })
    }
}

/// A tool behind a cassette, for one agent.
struct CassetteTool {
    inner: Arc<dyn Tool>,
    agent: String,
    cassette: Arc<Cassette>,
}

impl CassetteTool {
    fn replayed(
        &self,
        entry: Option<&ToolEntry>,
        call: u64,
        name: &str,
        arguments: &str,
    ) -> Result<ToolOutput, ToolError> {
        let agent = &self.agent;
        let Some(entry) = entry else {
            return Err(ToolError::Fatal(format!(
                "cassette: agent `{agent}` made tool call {call} ({name}), which is not in the cassette"
            )));
        };
        if entry.tool != name || entry.arguments != arguments {
            return Err(ToolError::Fatal(format!(
                "cassette: agent `{agent}` tool call {call} differs from the recorded one:\n- {}({})\n+ {name}({arguments})",
                entry.tool, entry.arguments
            )));
        }
        match (&entry.output, &entry.error) {
            (Some(content), _) => Ok(ToolOutput {
                content: content.clone(),
                memory: entry.memory.clone(),
            }),
            (None, Some(e)) => Err(ToolError::Failed(e.clone())),
            (None, None) => Err(ToolError::Fatal(format!(
                "cassette: agent `{agent}` tool call {call} has neither a result nor an error"
            ))),
        }
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
        let call = take(&self.cassette.next_tool, &self.agent);
        let name = self.inner.definition().name.clone();
        let redacted = match super::file::redact(
            serde_json::Value::String(arguments.to_string()),
            &self.cassette.secrets,
        ) {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        match &self.cassette.tools {
            Mode::Replay(entries) => self.replayed(
                entries.get(&(self.agent.clone(), call)),
                call,
                &name,
                &redacted,
            ),
            Mode::Record(writer) => {
                let t0 = Instant::now();
                let result = self.inner.call(arguments, ctx).await;
                let entry = ToolEntry {
                    agent: self.agent.clone(),
                    call,
                    tool: name,
                    arguments: redacted,
                    latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
                    output: result.as_ref().ok().map(|o| o.content.clone()),
                    memory: result.as_ref().ok().and_then(|o| o.memory.clone()),
                    error: result.as_ref().err().map(ToString::to_string),
                };
                writer
                    .append(&entry, &self.cassette.secrets)
                    .map_err(|e| ToolError::Fatal(e.to_string()))?;
                result
            }
        }
    }
}
