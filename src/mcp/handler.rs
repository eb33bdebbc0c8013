//! The MCP server handler: the served teams as tools, a call to one as a
//! run of the team (`call.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use super::inner::Inner;
use super::waiting::Waiting;
use super::{Admit, McpTeam};

/// The teams as an MCP server (cheap to clone: one per HTTP session).
#[derive(Clone)]
pub(crate) struct TeamServer {
    pub(super) inner: Arc<Inner>,
}

impl TeamServer {
    /// A server offering `teams`, each run under `admit` when given.
    pub(crate) fn new(teams: Vec<McpTeam>, admit: Option<Admit>) -> Self {
        let mut by_tool = BTreeMap::new();
        for team in teams {
            let base = tool_name(&team.name);
            let mut name = base.clone();
            let mut n = 2;
            while by_tool.contains_key(&name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            by_tool.insert(name, team);
        }
        TeamServer {
            inner: Arc::new(Inner {
                teams: by_tool,
                waiting: Waiting::default(),
                admit,
            }),
        }
    }

    /// The team `team` as the tool `name`.
    fn tool(name: &str, team: &McpTeam) -> Tool {
        let description = team.description.clone().unwrap_or_else(|| {
            format!(
                "Runs the troupe team `{}` on a message and answers with its answer.",
                team.name
            )
        });
        Tool::new(name.to_string(), description, input_schema())
    }
}

/// A team's name as a tool name: MCP's characters (`A-Z a-z 0-9 _ - .`,
/// 128 at most), any other one an underscore.
fn tool_name(team: &str) -> String {
    let name: String = team
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    if name.is_empty() { "team".into() } else { name }
}

/// A team's input: the message it runs on.
pub(super) fn input_schema() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "description": "The task or message for the team.",
            },
        },
        "required": ["message"],
    });
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for TeamServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("troupe", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool is a troupe team: call it with a `message`; its result is the team's \
                 answer. Progress follows the run's turns when the call carries a progress \
                 token; a question the team asks comes as an elicitation.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.inner
                .teams
                .iter()
                .map(|(name, team)| Self::tool(name, team))
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner
            .teams
            .get(name)
            .map(|team| Self::tool(name, team))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(team) = self.inner.teams.get(request.name.as_ref()) else {
            return Err(McpError::invalid_params(
                format!(
                    "no tool `{}`; served: {}",
                    request.name,
                    self.inner
                        .teams
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        };
        super::call::call(&self.inner, team, request, context).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_name_becomes_a_valid_tool_name() {
        assert_eq!(tool_name("refund-desk"), "refund-desk");
        assert_eq!(tool_name("Refund desk (EU)"), "Refund_desk__EU_");
        assert_eq!(tool_name("équipe.v2"), "_quipe.v2");
        assert_eq!(tool_name(""), "team");
        assert_eq!(tool_name(&"x".repeat(300)).len(), 120);
    }
}
