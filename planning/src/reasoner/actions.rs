//! The actions a reasoner runs — tools, agents, workflows — and what each
//! gives back: a result and, beside it, a memory (seed 003, pattern 6).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use troupe_agents::{Tool, ToolContext, ToolError};
use troupe_runtime::{Agent, AgentError, Content, Message, Reply, RunContext, Thread};

/// Metadata key of a message that carries its action's memory.
pub const MEMORY_KEY: &str = "troupe.memory";

/// An action a reasoner may ask for.
#[derive(Clone)]
pub enum Action {
    /// An agent, or a workflow run as one: it takes a turn on the request.
    Agent(Arc<dyn Agent>),
    /// A tool: called with the action's input as its arguments.
    Tool(Arc<dyn Tool>),
}

impl Action {
    /// The action's name.
    pub fn name(&self) -> &str {
        match self {
            Action::Agent(a) => a.name(),
            Action::Tool(t) => &t.definition().name,
        }
    }

    /// What it does (shown to the reasoner).
    pub fn description(&self) -> &str {
        match self {
            Action::Agent(a) => a.description(),
            Action::Tool(t) => &t.definition().description,
        }
    }

    /// Runs the action on `input` over `thread` (what its step sees):
    /// its result text and memory.
    pub async fn run(
        &self,
        id: &str,
        input: &serde_json::Value,
        thread: Arc<Thread>,
        ctx: &RunContext,
    ) -> Result<(String, Option<String>), AgentError> {
        match self {
            Action::Agent(agent) => {
                let reply = agent.run(thread, ctx.clone()).await?;
                let Some(last) = reply.messages().last() else {
                    return Ok((String::new(), None));
                };
                Ok((last.text_content().into_owned(), memory_of(last)))
            }
            Action::Tool(tool) => {
                let arguments = tool_arguments(tool.as_ref(), input);
                let tc = ToolContext {
                    agent: Arc::from(id),
                    call_id: id.to_string(),
                    thread,
                    run: ctx.clone(),
                    answers: Vec::new(),
                    sampler: None,
                };
                ctx.record_tool_call();
                match tool.call(&arguments, tc).await {
                    Ok(out) => Ok((out.content, out.memory)),
                    Err(ToolError::NeedsInput(q)) => Err(AgentError::failed(format!(
                        "action `{id}` ({}) asked the user ({q}), which an action cannot",
                        self.name()
                    ))),
                    // The reasoner sees the failure and decides.
                    Err(e) => Ok((format!("Error: {e}"), None)),
                }
            }
        }
    }
}

/// A message's memory: its [`MEMORY_KEY`], else a structured answer's
/// `memory` (or the seed's `action_memory.memory`) field.
pub(crate) fn memory_of(m: &Message) -> Option<String> {
    if let Some(memory) = m.metadata.get(MEMORY_KEY) {
        return Some(memory.to_string());
    }
    let Content::Structured(json) = &m.content else {
        return None;
    };
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value
        .get("memory")
        .or_else(|| value.get("action_memory")?.get("memory"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// A tool's arguments from an action's input: an object as it is; a
/// text to the tool's only (or only required) parameter, else under
/// `input`.
fn tool_arguments(tool: &dyn Tool, input: &serde_json::Value) -> String {
    if input.is_object() {
        return input.to_string();
    }
    let text = match input {
        serde_json::Value::String(s) => serde_json::Value::String(s.clone()),
        serde_json::Value::Null => serde_json::Value::String(String::new()),
        other => other.clone(),
    };
    let params = &tool.definition().parameters;
    let names: Vec<&str> = params
        .get("required")
        .and_then(|r| r.as_array())
        .filter(|r| r.len() == 1)
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .or_else(|| {
            params
                .get("properties")
                .and_then(|p| p.as_object())
                .filter(|p| p.len() == 1)
                .map(|p| p.keys().map(String::as_str).collect())
        })
        .unwrap_or_default();
    let key = names.first().copied().unwrap_or("input");
    serde_json::json!({ key: text }).to_string()
}

/// What one action (or a parallel group's summarizer) gave back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    /// The action's id in its batch.
    pub id: String,
    /// The action's name (`summarizer` for a group's merge).
    pub action: String,
    /// The result.
    pub result: String,
    /// Its memory, if it kept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// `{action_result}`: the results as the seed's XML.
pub fn render_results(results: &[ActionResult]) -> String {
    if results.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ActionResults>\n");
    for r in results {
        out.push_str(&format!(
            "  <Action id=\"{}\">\n    <ActionType>{}</ActionType>\n    <ActionResult>{}</ActionResult>\n  </Action>\n",
            r.id, r.action, r.result
        ));
    }
    out.push_str("</ActionResults>");
    out
}

/// `{action_memory}`: each memory kept, `ID: memory`, one a line.
pub fn render_memories(results: &[ActionResult]) -> String {
    results
        .iter()
        .filter_map(|r| r.memory.as_ref().map(|m| format!("{}: {m}", r.id)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A plain action as a step of a batch: its reply is the result, its
/// memory under [`MEMORY_KEY`].
pub(crate) struct ActionStep {
    pub(crate) id: String,
    pub(crate) action: Action,
    pub(crate) input: serde_json::Value,
}

#[async_trait]
impl Agent for ActionStep {
    fn name(&self) -> &str {
        &self.id
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let (result, memory) = self.action.run(&self.id, &self.input, thread, &ctx).await?;
        Ok(Reply::message(with_memory(
            Message::text("", result),
            memory,
        )))
    }
}

/// `m` carrying `memory`, if any.
pub(crate) fn with_memory(m: Message, memory: Option<String>) -> Message {
    match memory {
        Some(memory) => m.with_metadata(MEMORY_KEY, memory),
        None => m,
    }
}
