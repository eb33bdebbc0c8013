//! Webhook delivery shared by A2A push notifications and the runs API's
//! completion webhooks: one JSON POST, tried again with a doubling backoff
//! until the receiver answers 2xx (at most [`ATTEMPTS`] tries).

use std::sync::LazyLock;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

/// How many times a delivery is tried.
pub(crate) const ATTEMPTS: u32 = 5;
/// The wait before the first retry (doubling after each).
const BACKOFF: Duration = Duration::from_millis(200);
/// How long one try may take.
const TIMEOUT: Duration = Duration::from_secs(15);

/// The HTTP client deliveries go out with.
fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: LazyLock<Option<reqwest::Client>> = LazyLock::new(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder().timeout(TIMEOUT).build().ok()
    });
    CLIENT.as_ref()
}

/// POSTs `body` to `url` with `headers`, retrying until a 2xx answers;
/// whether it was delivered. Each failed try is logged (redacted) with
/// `what` naming the delivery.
pub(crate) async fn post(url: &str, headers: &[(String, String)], body: &str, what: &str) -> bool {
    let Some(http) = client() else {
        tracing::warn!("{what}: no HTTP client");
        return false;
    };
    let mut attempt = 0;
    let attempt_once = || {
        attempt += 1;
        let attempt = attempt;
        let mut request = http.post(url).body(body.to_string());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move {
            let outcome = match request.send().await {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => format!("answered {}", r.status()),
                Err(e) => e.to_string(),
            };
            tracing::warn!(
                attempt,
                "{what} not delivered: {}",
                troupe::secrets::redact(&outcome)
            );
            Err(())
        }
    };
    // 200 ms, 400 ms, 800 ms, 1.6 s between the five tries; no jitter.
    let backoff = ExponentialBuilder::new()
        .with_min_delay(BACKOFF)
        .with_factor(2.0)
        .without_max_delay()
        .with_max_times(ATTEMPTS as usize - 1);
    attempt_once
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .await
        .is_ok()
}
