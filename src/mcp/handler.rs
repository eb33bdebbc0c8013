//! The MCP server handler: the served teams as tools, a call to one as a
//! run of the team (`call.rs`); the declared resources, prompts and
//! completions (`resources.rs`, `prompts.rs`, `completion.rs`); the
//! session's log level (`logging.rs`).

#![allow(deprecated)] // MCP logging and `resources/subscribe`: deprecated by the 2026 revision, in 2025-11-25.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use super::inner::Inner;
use super::logging::LogLevel;
use super::record::{Recorder, Records};
use super::resources::{self, Subscriptions};
use super::surface::Surface;
use super::waiting::Waiting;
use super::{Admit, McpTeam, completion, prompts};

/// How long a client may keep `tools/list` (the served teams stay as long
/// as the server runs).
const TOOLS_TTL_MS: u64 = 60_000;

/// The teams as an MCP server. Cheap to clone; [`TeamServer::session`]
/// gives each HTTP session its own log level and subscriptions.
#[derive(Clone)]
pub(crate) struct TeamServer {
    pub(super) inner: Arc<Inner>,
    log: LogLevel,
    subscriptions: Subscriptions,
}

impl TeamServer {
    /// A server offering `teams`, each run under `admit` when given and
    /// recorded by `recorder`, with the resources and prompts their
    /// configs declare.
    pub(crate) fn new(
        teams: Vec<McpTeam>,
        admit: Option<Admit>,
        recorder: Option<Recorder>,
    ) -> Self {
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
        let surface = Surface::of(by_tool.values());
        TeamServer {
            inner: Arc::new(Inner {
                teams: by_tool,
                surface,
                waiting: Waiting::default(),
                records: Records::new(recorder),
                admit,
            }),
            log: LogLevel::default(),
            subscriptions: Subscriptions::default(),
        }
    }

    /// The same server for a new session: no log level, no subscriptions.
    pub(crate) fn session(&self) -> Self {
        TeamServer {
            inner: self.inner.clone(),
            log: LogLevel::default(),
            subscriptions: Subscriptions::default(),
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
        Tool::new(
            name.to_string(),
            description,
            super::tool_io::input_schema(team),
        )
    }

    /// What the server offers: tools and logging always; resources (with
    /// subscriptions), prompts and completions when declared.
    fn capabilities(&self) -> ServerCapabilities {
        let surface = &self.inner.surface;
        let mut caps = json!({"tools": {}, "logging": {}});
        if surface.has_resources() {
            caps["resources"] = json!({"subscribe": true});
        }
        if !surface.prompts.is_empty() {
            caps["prompts"] = json!({});
        }
        if !surface.prompts.is_empty() || !surface.templates.is_empty() {
            caps["completions"] = json!({});
        }
        serde_json::from_value(caps).unwrap_or_default()
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

impl ServerHandler for TeamServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(self.capabilities())
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
        let mut list = ListToolsResult::with_all_items(
            self.inner
                .teams
                .iter()
                .map(|(name, team)| Self::tool(name, team))
                .collect(),
        );
        list.ttl_ms = Some(TOOLS_TTL_MS);
        list.cache_scope = serde_json::from_value(json!("private")).ok();
        Ok(list)
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
        // A 2026-07-28 request says its log level in `_meta`; a session set it.
        let log = context.meta.log_level().or_else(|| self.log.get());
        super::call::call(&self.inner, team, request, context, log).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        resources::list(&self.inner.surface)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        resources::templates(&self.inner.surface)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        resources::read(&self.inner.surface, &request.uri)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions
            .subscribe(&self.inner.surface, &request.uri, context.peer.clone())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(resources::accepted(&self.inner.surface, requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        resources::listen(&self.inner.surface, context).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        prompts::list(&self.inner.surface)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        prompts::get(&self.inner.surface, &request, stateless)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        completion::complete(&self.inner.surface, &request)
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
