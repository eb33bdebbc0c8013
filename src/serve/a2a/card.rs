//! The agent card of a served team (`GET /.well-known/agent-card.json`,
//! `GET /a2a/{team}/.well-known/agent-card.json`): its name and
//! description, a skill per agent of the config, streaming, push
//! notifications, the JSON-RPC endpoint at this server's address and the
//! HTTP+JSON one beside it, and the bearer scheme when a token
//! is required.

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::HeaderMap;
use axum::http::header::HOST;
use serde_json::json;
use troupe::agents::a2a::types::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HTTP_JSON_BINDING, JSONRPC_BINDING,
    PROTOCOL_VERSION,
};

use super::super::error::ApiError;
use super::super::state::Shared;
use super::super::team::Team;

/// `GET /.well-known/agent-card.json`: the first team's card.
pub(crate) async fn default_card(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
) -> Result<Json<AgentCard>, ApiError> {
    let team = state.team(None)?;
    Ok(Json(card(team, &base(&headers), state.token.is_some())))
}

/// `GET /a2a/{team}/.well-known/agent-card.json`.
pub(crate) async fn team_card(
    Axum(state): Axum<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<AgentCard>, ApiError> {
    let team = state.team(Some(&name))?;
    Ok(Json(card(team, &base(&headers), state.token.is_some())))
}

/// `http://HOST` as the caller reached the server.
pub(crate) fn base(headers: &HeaderMap) -> String {
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// `team`'s card, its endpoint under `base`.
pub(crate) fn card(team: &Team, base: &str, token: bool) -> AgentCard {
    let spec = team.config.spec();
    let skills = spec
        .agents
        .iter()
        .map(|(name, a)| AgentSkill {
            id: name.clone(),
            name: name.clone(),
            description: a
                .description
                .clone()
                .unwrap_or_else(|| format!("{name}, an agent of team {}", team.name)),
            tags: vec!["troupe".into(), team.name.clone()],
            examples: Vec::new(),
        })
        .collect();
    let text = || vec!["text/plain".to_string()];
    AgentCard {
        name: team.name.clone(),
        description: spec
            .description
            .clone()
            .unwrap_or_else(|| format!("The troupe team {}", team.name)),
        supported_interfaces: vec![
            AgentInterface {
                url: format!("{base}/a2a/{}", team.name),
                protocol_binding: JSONRPC_BINDING.into(),
                protocol_version: PROTOCOL_VERSION.into(),
            },
            AgentInterface {
                url: format!("{base}/a2a/{}/v1", team.name),
                protocol_binding: HTTP_JSON_BINDING.into(),
                protocol_version: PROTOCOL_VERSION.into(),
            },
        ],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(token),
        },
        default_input_modes: vec![
            "text/plain".into(),
            "application/json".into(),
            "text/*".into(),
        ],
        default_output_modes: text(),
        skills,
        security_schemes: token.then(|| {
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "TROUPE_SERVE_TOKEN"}}})
        }),
        security_requirements: if token {
            vec![json!({"schemes": {"bearer": {"list": []}}})]
        } else {
            Vec::new()
        },
        url: None,
    }
}
