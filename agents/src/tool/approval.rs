//! [`NeedsApproval`]: a tool whose every call waits for the user's yes.

use std::fmt;

use async_trait::async_trait;

use super::{Tool, ToolContext, ToolOutput};
use crate::error::ToolError;
use crate::model::ToolDefinition;

/// A tool whose calls wait for the user's approval: when the model calls
/// it, a [`ChatAgent`](crate::ChatAgent)'s turn ends with the input request
/// `approve <tool>(<arguments>)? yes/no`. The answer `yes`, `y`, `ok`,
/// `approve` or `approved` (any case) runs the call; any other answer gives
/// the model a result saying the user denied it, with the user's words.
/// Works for any tool: a function, an MCP server's tool, an agent.
///
/// ```
/// use serde::Deserialize;
/// use troupe_agents::{schemars::JsonSchema, FunctionTool, NeedsApproval, Tool};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct File {
///     path: String,
/// }
///
/// let delete = FunctionTool::new("delete_file", "Deletes a file.", |f: File| async move {
///     Ok::<_, String>(format!("deleted {}", f.path))
/// });
/// let guarded = NeedsApproval::new(delete);
/// assert!(guarded.needs_approval());
/// assert_eq!(guarded.definition().name, "delete_file");
/// ```
pub struct NeedsApproval<T> {
    inner: T,
}

impl<T: Tool> NeedsApproval<T> {
    /// `tool`, asking for approval before each call.
    pub fn new(tool: T) -> Self {
        NeedsApproval { inner: tool }
    }

    /// The tool inside.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

impl<T: Tool> fmt::Debug for NeedsApproval<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NeedsApproval")
            .field("tool", &self.inner.definition().name)
            .finish()
    }
}

#[async_trait]
impl<T: Tool> Tool for NeedsApproval<T> {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner.call(arguments, ctx).await
    }

    fn needs_approval(&self) -> bool {
        true
    }
}
