//! CORS, off unless `--cors ORIGIN`: then that origin (or `*`) may call
//! the API from a browser, preflights included.

use std::sync::Arc;

use axum::extract::{Request, State as Axum};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The allowed origin.
#[derive(Debug, Clone)]
pub(crate) struct Cors {
    origin: HeaderValue,
}

impl Cors {
    /// Allows `origin` (`https://host[:port]`, or `*`).
    pub(crate) fn new(origin: &str) -> Result<Self, String> {
        let plausible = origin == "*"
            || ((origin.starts_with("http://") || origin.starts_with("https://"))
                && !origin.ends_with('/'));
        let value = HeaderValue::from_str(origin).ok().filter(|_| plausible);
        value.map(|origin| Cors { origin }).ok_or_else(|| {
            format!("--cors takes an origin such as https://chat.example.com (no path) or *, got `{origin}`")
        })
    }

    fn allows(&self, origin: Option<&HeaderValue>) -> bool {
        self.origin == "*" || origin == Some(&self.origin)
    }
}

/// The middleware: answers preflights and marks responses to an allowed
/// origin; a request from any other origin gets no CORS headers (so the
/// browser keeps the answer from the page).
pub(crate) async fn apply(Axum(cors): Axum<Arc<Cors>>, req: Request, next: Next) -> Response {
    let origin = req.headers().get(header::ORIGIN).cloned();
    let allowed = cors.allows(origin.as_ref());
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(req).await
    };
    if allowed {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, cors.origin.clone());
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        if preflight {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST, OPTIONS"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(
                    "authorization, content-type, last-event-id, x-troupe-session",
                ),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_a_scheme_and_host_or_a_star() {
        assert!(Cors::new("https://chat.example.com").is_ok());
        assert!(Cors::new("http://localhost:3000").is_ok());
        assert!(Cors::new("*").is_ok());
        for bad in [
            "chat.example.com",
            "https://chat.example.com/",
            "",
            "https://a\nb",
        ] {
            let err = Cors::new(bad).unwrap_err();
            assert!(err.contains("--cors takes an origin"), "{bad}: {err}");
        }
        let c = Cors::new("https://a.example").unwrap();
        assert!(c.allows(Some(&HeaderValue::from_static("https://a.example"))));
        assert!(!c.allows(Some(&HeaderValue::from_static("https://b.example"))));
        assert!(!c.allows(None));
    }
}
