//! The `yield_output` built-in tool (seed 002's `yield_output`): the model
//! yields a message (`{"text": …}`) as an output of its turn. Each one
//! becomes a message of the agent's turn before its final response: it
//! reaches the threads, the run's result and the event stream
//! (`message_produced` in `--events jsonl`) like the response does.

use serde::Deserialize;
use troupe_agents::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, async_trait};
use troupe_runtime::Message;

/// The tool's name.
pub(crate) const NAME: &str = "yield_output";

#[derive(Deserialize)]
struct YieldArgs {
    text: String,
}

/// Yields an output of the calling agent's turn.
pub(crate) struct YieldOutput(ToolDefinition);

impl YieldOutput {
    /// The tool.
    pub(crate) fn new() -> Self {
        YieldOutput(ToolDefinition {
            name: NAME.into(),
            description: "Yields a message as an output of your turn now, before your final \
                          answer (call it once per output)."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The output's text."}
                },
                "required": ["text"]
            }),
        })
    }
}

#[async_trait]
impl Tool for YieldOutput {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: YieldArgs =
            serde_json::from_str(arguments).map_err(|e| ToolError::InvalidArguments {
                tool: NAME.into(),
                message: e.to_string(),
            })?;
        let message = Message::text(ctx.agent.clone(), args.text);
        if ctx.run.yield_output(message) {
            Ok(ToolOutput::text("output yielded"))
        } else {
            Err(ToolError::Failed(
                "no output can be yielded here (only in a workflow participant's own turn)".into(),
            ))
        }
    }
}
