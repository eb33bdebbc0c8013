//! [`McpTool`]: one tool of an MCP server, as a [`Tool`] an agent calls.

use async_trait::async_trait;

use super::McpToolInfo;
use super::client::McpClient;
use crate::error::{McpError, ToolError};
use crate::model::ToolDefinition;
use crate::tool::arguments::readable;
use crate::tool::{Tool, ToolContext, ToolOutput, parse_arguments};

/// One tool of an MCP server, usable by an agent.
#[derive(Debug, Clone)]
pub struct McpTool {
    client: McpClient,
    remote_name: String,
    definition: ToolDefinition,
}

impl McpClient {
    /// The server's (allowed) tools, as tools an agent can use.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        Ok(self
            .list_tools()
            .await?
            .into_iter()
            .map(|info| McpTool::new(self.clone(), info))
            .collect())
    }
}

impl McpTool {
    fn new(client: McpClient, info: McpToolInfo) -> Self {
        let name = match &client.config().tool_prefix {
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
    /// that fails, hangs or is gone, come back as tool errors in words
    /// (the server, what was asked, what went wrong).
    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let value = parse_arguments(&self.definition.name, arguments)?;
        if !value.is_object() {
            return Err(ToolError::InvalidArguments {
                tool: self.definition.name.clone(),
                message: "the arguments must be a JSON object".into(),
            });
        }
        let result = match self
            .client
            .call_tool_in(&self.remote_name, value, Some(&ctx))
            .await
        {
            Ok(result) => result,
            Err(McpError::InputNeeded { question, .. }) => {
                return Err(ToolError::NeedsInput(question));
            }
            Err(e) => return Err(ToolError::Failed(e.to_string())),
        };
        if result.is_error {
            // A Rust server's error may name Rust types: put as JSON kinds.
            Err(ToolError::Failed(readable(&result.text)))
        } else {
            let output = ToolOutput::text(result.text);
            Ok(match result.memory {
                Some(memory) => output.with_memory(memory),
                None => output,
            })
        }
    }
}
