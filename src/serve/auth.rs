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
    if asks_for_the_page(&req) {
        return ask_for_token();
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

/// A browser opening the console's page (`GET /` asking for HTML).
fn asks_for_the_page(req: &Request) -> bool {
    req.method() == Method::GET
        && req.uri().path() == "/"
        && req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/html"))
}

/// The small page asking for the token (still a 401): it opens the
/// console with `?token=`, which the console then keeps for the tab.
fn ask_for_token() -> Response {
    let page = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>troupe: token needed</title>\
<style>body{font:15px system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem;color:#1d2330}\
input,button{font:inherit;padding:.4rem .6rem}input{width:100%;box-sizing:border-box;margin:.5rem 0}</style>\
</head><body><h1>troupe</h1>\
<p>This server needs its token (<code>TROUPE_SERVE_TOKEN</code>) to open the console.</p>\
<form data-testid=\"token-form\" onsubmit=\"location.href='/?token='+encodeURIComponent(this.token.value);return false\">\
<input name=\"token\" type=\"password\" autocomplete=\"current-password\" placeholder=\"token\" autofocus required>\
<button type=\"submit\">Open the console</button></form></body></html>";
    let mut response = (StatusCode::UNAUTHORIZED, page).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
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
