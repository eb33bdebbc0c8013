//! The server's state (the teams, the runs, the limits, the token) and its
//! router.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use axum::middleware;
use axum::routing::{get, post};

use super::cors::Cors;
use super::error::ApiError;
use super::limits::Limits;
use super::runs::Registry;
use super::team::Team;
use super::{auth, cors, events, openai, runs, sessions, team};

/// Everything a request handler sees.
pub(crate) struct State {
    /// The teams by name.
    pub(crate) teams: BTreeMap<String, Team>,
    /// The bearer token every route requires, if one is set.
    pub(crate) token: Option<Arc<str>>,
    /// Body size and concurrent runs.
    pub(crate) limits: Limits,
    /// The runs started since the server started.
    pub(crate) runs: Registry,
}

/// The state as handlers share it.
pub(crate) type Shared = Arc<State>;

impl State {
    /// The state of a server over `teams`.
    pub(crate) fn new(
        teams: BTreeMap<String, Team>,
        token: Option<Arc<str>>,
        limits: Limits,
    ) -> Shared {
        Arc::new(State {
            teams,
            token,
            limits,
            runs: Registry::default(),
        })
    }

    /// The team `name` names; without a name, the only (or first) one.
    pub(crate) fn team(&self, name: Option<&str>) -> Result<&Team, ApiError> {
        match name {
            Some(n) => self.teams.get(n).ok_or_else(|| {
                ApiError::not_found(format!(
                    "no team `{n}`; served: {}",
                    self.teams.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            }),
            None => self
                .teams
                .values()
                .next()
                .ok_or_else(|| ApiError::not_found("no team is served".into())),
        }
    }
}

/// The router: every route behind the token check, the body limit and,
/// when configured, CORS.
pub(crate) fn router(state: Shared, cors: Option<Cors>) -> Router {
    let api = Router::new()
        .route("/team", get(team::describe))
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/runs", post(runs::start).get(runs::list))
        .route("/runs/{id}", get(runs::status))
        .route("/runs/{id}/events", get(events::stream))
        .route("/runs/{id}/input", post(runs::input))
        .route("/runs/{id}/cancel", post(runs::cancel))
        .route("/sessions", get(sessions::list))
        .route("/sessions/{id}", get(sessions::show));
    // The web console (`GET /`, `GET /console/{file}`), behind the same
    // token check (which takes `?token=` on these two only).
    let api = api.merge(super::console::routes());
    // Each team as an A2A agent: its card and JSON-RPC endpoint.
    let api = api.merge(super::a2a::routes());
    let app = api
        .fallback(|| async { ApiError::not_found("no such route".into()) })
        .layer(DefaultBodyLimit::max(state.limits.max_body))
        .layer(middleware::from_fn_with_state(state.clone(), auth::check))
        .with_state(state);
    match cors {
        Some(c) => app.layer(middleware::from_fn_with_state(Arc::new(c), cors::apply)),
        None => app,
    }
}

/// The value of query parameter `name` (percent-decoded), if given.
pub(crate) fn query_param(uri: &Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)).map(|(h, l)| (h * 16 + l) as u8),
            _ => None,
        };
        match (decoded, bytes[i]) {
            (Some(b), _) => {
                out.push(b);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, b) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_found_and_decoded() {
        let uri: Uri = "/?a=1&token=t%2Bk+n%zz&empty&team=d%C3%A9sk"
            .parse()
            .unwrap();
        assert_eq!(query_param(&uri, "token").as_deref(), Some("t+k n%zz"));
        assert_eq!(query_param(&uri, "team").as_deref(), Some("désk"));
        assert_eq!(query_param(&uri, "empty").as_deref(), Some(""));
        assert_eq!(query_param(&uri, "b"), None);
        assert_eq!(query_param(&"/x".parse().unwrap(), "a"), None);
        // A `%` at the very end is kept as it is.
        assert_eq!(
            query_param(&"/?t=a%".parse().unwrap(), "t").as_deref(),
            Some("a%")
        );
    }
}
