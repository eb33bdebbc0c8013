//! The server's router: every route, behind the token check, the body
//! limit and, when configured, CORS.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};

use super::cors::Cors;
use super::error::ApiError;
use super::state::Shared;
use super::{auth, cors, describe, events, fork, intake, openai, runs, sessions};

/// The router: every route behind the token check, the body limit and,
/// when configured, CORS.
pub(crate) fn router(state: Shared, cors: Option<Cors>) -> Router {
    let api = Router::new()
        .route("/team", get(describe::describe))
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/runs", post(runs::start).get(runs::list))
        .route("/runs/{id}", get(runs::status))
        .route("/runs/{id}/events", get(events::stream))
        .route("/runs/{id}/input", post(runs::input))
        .route("/runs/{id}/cancel", post(runs::cancel))
        .route("/runs/{id}/fork", post(fork::fork))
        .route("/sessions", get(sessions::list))
        .route("/sessions/{id}", get(sessions::show));
    // The web console (`GET /`, `GET /console/{file}`), behind the same
    // token check (which takes `?token=` on these two only).
    let api = api.merge(super::console::routes());
    // Each team as an A2A agent: its card and JSON-RPC endpoint.
    let api = api.merge(super::a2a::routes());
    // Each team as an MCP tool (streamable HTTP).
    let api = api.merge(super::mcp::routes(&state));
    // Each team as an AG-UI agent.
    let api = api.merge(super::agui::routes());
    let app = api
        .fallback(|| async { ApiError::not_found("no such route".into()) })
        .layer(DefaultBodyLimit::max(state.limits.max_body))
        // After the token check: nothing of the body is read before it.
        .layer(middleware::from_fn_with_state(state.clone(), intake::check))
        .layer(middleware::from_fn_with_state(state.clone(), auth::check))
        .with_state(state);
    match cors {
        Some(c) => app.layer(middleware::from_fn_with_state(Arc::new(c), cors::apply)),
        None => app,
    }
}
