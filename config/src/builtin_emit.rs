//! The `emit_event` built-in tool: the model emits a custom event of its
//! agent (`{"name": …, "data": …}`), which reaches the run's event stream
//! (`--events jsonl`, the console, `troupe serve`'s streams).

use serde::Deserialize;
use troupe_agents::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, async_trait};

/// The tool's name.
pub(crate) const NAME: &str = "emit_event";

#[derive(Deserialize)]
struct EmitArgs {
    name: String,
    #[serde(default)]
    data: serde_json::Value,
}

/// Emits a custom event from the calling agent.
pub(crate) struct EmitEvent(ToolDefinition);

impl EmitEvent {
    /// The tool.
    pub(crate) fn new() -> Self {
        EmitEvent(ToolDefinition {
            name: NAME.into(),
            description:
                "Emits a custom event (a name and any JSON data) to whoever watches the run.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The event's name."},
                    "data": {"description": "What the event carries (any JSON)."}
                },
                "required": ["name"]
            }),
        })
    }
}

#[async_trait]
impl Tool for EmitEvent {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let invalid = |message: String| ToolError::InvalidArguments {
            tool: NAME.into(),
            message,
        };
        let args: EmitArgs = serde_json::from_str(arguments).map_err(|e| invalid(e.to_string()))?;
        if args.name.trim().is_empty() {
            return Err(invalid("an empty event name".into()));
        }
        ctx.run.emit_custom(args.name.clone(), args.data);
        Ok(ToolOutput::text(format!("event `{}` emitted", args.name)))
    }
}
