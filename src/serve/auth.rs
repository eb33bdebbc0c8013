//! The bearer token: required to bind anything but loopback, and checked
//! on every route when set (`Authorization: Bearer <token>`; the console's
//! page and assets also take `?token=` once, so a browser can open them)
//! but the A2A agent cards, which announce the scheme.

use std::net::SocketAddr;

use axum::extract::{Request, State as Axum};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::TOKEN_ENV;
use super::error::ApiError;
use super::query::query_param;
use super::state::Shared;

/// Refuses a bind that would expose the server without a token.
pub(crate) fn check_bind(addr: SocketAddr, has_token: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || has_token {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {addr} without a token: anything but a loopback address needs {TOKEN_ENV} set (every request must then carry `Authorization: Bearer <token>`)"
        ))
    }
}

/// The middleware: lets a request through when no token is set or it
/// carries the token; 401 otherwise.
pub(crate) async fn check(Axum(state): Axum<Shared>, req: Request, next: Next) -> Response {
    let Some(token) = state.token.as_deref() else {
        return next.run(req).await;
    };
    if public(&req) {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string)
        .or_else(|| page_token(&req));
    if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token (Authorization: Bearer <token>)".into(),
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Whether `req` reads an A2A agent card, public whatever the token: the
/// card is where a client learns that the agent wants a bearer token.
fn public(req: &Request) -> bool {
    const CARD: &str = "/.well-known/agent-card.json";
    let path = req.uri().path();
    let card = path == CARD
        || path
            .strip_prefix("/a2a/")
            .and_then(|rest| rest.strip_suffix(CARD))
            .is_some_and(|team| !team.is_empty() && !team.contains('/'));
    req.method() == Method::GET && card
}

/// `?token=` on a GET of the console's page or assets (only there: an API
/// call carries the header).
fn page_token(req: &Request) -> Option<String> {
    let path = req.uri().path();
    let page = path == "/" || path.starts_with("/console/");
    (req.method() == Method::GET && page)
        .then(|| query_param(req.uri(), "token"))
        .flatten()
}

/// Compares in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_binds_freely_anything_else_needs_a_token() {
        let v4 = "127.0.0.1:8080".parse().unwrap();
        let v6 = "[::1]:0".parse().unwrap();
        let all = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(v4, false).is_ok());
        assert!(check_bind(v6, false).is_ok());
        let err = check_bind(all, false).unwrap_err();
        assert!(err.contains("TROUPE_SERVE_TOKEN"), "{err}");
        assert!(check_bind(all, true).is_ok());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
    }
}
