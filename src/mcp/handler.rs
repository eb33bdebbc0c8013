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

use super::waiting::Waiting;
use super::{Admit, McpTeam};

/// The teams as an MCP server (cheap to clone: one per HTTP session).
#[derive(Clone)]
pub(crate) struct TeamServer {
    pub(super) inner: Arc<Inner>,
}

/// What every session of the server shares.
pub(super) struct Inner {
    /// The teams by tool name.
    pub(super) teams: BTreeMap<String, McpTeam>,
    /// Runs waiting for a stateless client's answers.
    pub(super) waiting: Waiting,
    /// The run limit, if the host has one.
    pub(super) admit: Option<Admit>,
}

impl TeamServer {
    /// A server offering `teams`, each run under `admit` when given.
    pub(crate) fn new(teams: Vec<McpTeam>, admit: Option<Admit>) -> Self {
        TeamServer {
            inner: Arc::new(Inner {
                teams: teams.into_iter().map(|t| (t.name.clone(), t)).collect(),
                waiting: Waiting::default(),
                admit,
            }),
        }
    }

    /// The team `name` as a tool.
    fn tool(team: &McpTeam) -> Tool {
        let description = team.description.clone().unwrap_or_else(|| {
            format!(
                "Runs the troupe team `{}` on a message and answers with its answer.",
                team.name
            )
        });
        Tool::new(team.name.clone(), description, input_schema())
    }
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
            self.inner.teams.values().map(Self::tool).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.teams.get(name).map(Self::tool)
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
