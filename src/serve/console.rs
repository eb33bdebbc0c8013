//! The web console: a static page (HTML, JavaScript, CSS from
//! `src/serve/console/`) built into the binary, served at `/` and
//! `/console/{file}`.
//!
//! The page talks to the server only through the HTTP API (`team`, `runs`,
//! `sessions`, beside the page: its links and requests are relative, so the
//! routes may be nested under a prefix), sending `Authorization: Bearer`
//! when it was opened with `?token=`. A browser loading `<script src>` and `<link href>` cannot
//! add that header, so when the page itself is asked for with `?token=`, the
//! token is carried onto its asset links (the server accepts the query
//! parameter on `/` and the assets only).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// A file of the console, as built into the binary.
struct Asset {
    /// Its name under `/console/`.
    name: &'static str,
    /// Its `Content-Type`.
    content_type: &'static str,
    /// Its bytes.
    body: &'static [u8],
}

/// The page itself.
const INDEX: &str = include_str!("console/index.html");

/// The files `/console/{file}` serves.
const ASSETS: &[Asset] = &[
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("console/app.js"),
    },
    Asset {
        name: "api.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("console/api.js"),
    },
    Asset {
        name: "graph.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("console/graph.js"),
    },
    Asset {
        name: "timeline.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("console/timeline.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("console/style.css"),
    },
];

/// What the page may load and connect to: itself only (no CDN, no inline
/// script), pictures as data URLs.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

/// The console's routes: `GET /` (the page) and `GET /console/{file}` (its
/// script and style sheet). They hold no state, so they merge into a router
/// of any state; authentication is the caller's layer.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/console/{file}", get(asset))
}

/// The page, with `?token=` (when given) carried onto its asset links.
async fn index(uri: Uri) -> Response {
    let page = match uri.query().and_then(token_param) {
        Some(token) => with_token(INDEX, &token),
        None => INDEX.to_string(),
    };
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// One of the console's files, or a 404 that names it.
async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            a.body,
        )
            .into_response(),
        None => {
            let body = serde_json::json!({
                "error": {
                    "message": format!("no console file `{file}`"),
                    "type": "not_found",
                }
            });
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    }
}

/// The raw (still percent-encoded) value of `token` in a query string.
fn token_param(query: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .filter(|t| !t.is_empty())
        .map(url_safe)
}

/// `value` with every byte a URL query value may not hold bare
/// percent-encoded (`%` kept, so an encoded value stays as it was): safe
/// inside a quoted HTML attribute too.
fn url_safe(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'%') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The page with `?token=TOKEN` on every asset link.
fn with_token(page: &str, token: &str) -> String {
    ASSETS.iter().fold(page.to_string(), |page, a| {
        let link = format!("\"console/{}\"", a.name);
        let with = format!("\"console/{}?token={token}\"", a.name);
        page.replace(&link, &with)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_the_page_links_is_served() {
        for a in ASSETS {
            assert!(
                INDEX.contains(&format!("\"console/{}\"", a.name)),
                "index.html does not link {}",
                a.name
            );
            assert!(!a.body.is_empty(), "{} is empty", a.name);
        }
    }

    #[test]
    fn a_token_reaches_the_asset_links_and_cannot_break_out_of_them() {
        let token = token_param("x=1&token=ab%2Fc\"><script>").unwrap_or_default();
        assert_eq!(token, "ab%2Fc%22%3E%3Cscript%3E");
        let page = with_token(INDEX, &token);
        assert!(page.contains("\"console/app.js?token=ab%2Fc%22%3E%3Cscript%3E\""));
        assert!(page.contains("\"console/style.css?token=ab%2Fc%22%3E%3Cscript%3E\""));
        assert_eq!(token_param("token=&a=b"), None);
        assert_eq!(token_param("a=b"), None);
    }
}
