//! `/mcp`: every served team as an MCP tool over streamable HTTP (rmcp's
//! service: 2025-11-25 sessions with `Mcp-Session-Id`, 2026-07-28
//! stateless requests), behind the same bearer token, body limit and CORS
//! as every route. A call's run takes one of the server's run slots
//! (`--max-runs`). Without a token the server is loopback-only, and
//! `/mcp` then also refuses a `Host` that is not loopback (DNS rebinding);
//! with a token the token is the guard. A call's run is listed in
//! `GET /runs` like any other (its answers come through MCP, not
//! `POST /runs/{id}/input`; `POST /runs/{id}/cancel` cancels it).

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::state::Shared;
use tokio_util::sync::CancellationToken;
use troupe::{RunResult, event::EventRecord};

use super::run::Run;
use crate::mcp::{Admit, McpTeam, Recorder, RunRecord, TeamServer};

/// The `/mcp` route.
pub(crate) fn routes(state: &Shared) -> Router<Shared> {
    let teams: Vec<McpTeam> = state
        .teams
        .values()
        .map(|t| McpTeam::new(t.name.clone(), t.config.clone(), t.built.workflow.clone()))
        .collect();
    let slots = state.clone();
    let admit: Admit = Arc::new(move || {
        slots
            .limits
            .run_slot()
            .map(|p| Box::new(p) as Box<dyn Send + Sync>)
            .map_err(|e| e.message)
    });
    let runs = state.clone();
    let recorder: Recorder = Arc::new(move |team: &str, task: &str| {
        Arc::new(Listed(runs.runs.create(team, task, None))) as Arc<dyn RunRecord>
    });
    let server = TeamServer::new(teams, Some(admit), Some(recorder));
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_max_request_body_bytes(state.limits.max_body);
    if state.token.is_some() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().route_service("/mcp", service)
}

/// A call's run as `GET /runs` lists it.
struct Listed(Arc<Run>);

impl RunRecord for Listed {
    fn id(&self) -> String {
        self.0.id.clone()
    }

    fn cancellation(&self) -> CancellationToken {
        self.0.ctx.cancellation().clone()
    }

    fn event(&self, record: &EventRecord) {
        self.0.log(record);
    }

    fn finish(&self, result: Result<RunResult, String>) {
        self.0.finish(result);
        // Its questions are answered through MCP: keep no thread for
        // `POST /runs/{id}/input` to run on besides.
        self.0.inner().thread = None;
    }
}
