//! Completion webhooks of background runs (`POST /runs` with
//! `background: true` and `webhook: {url, headers}`): each time the run
//! settles — completed, failed, cancelled, stopped, interrupted, or
//! waiting for input — its detail (`GET /runs/{id}`'s body: id, team,
//! status, final response, usage, error, open requests) is POSTed as JSON
//! to the URL with the given headers, retried with backoff
//! (`deliver.rs`). A run answered after waiting for input is told again
//! when it settles next. On a PostgreSQL store the webhook is kept with the
//! run's record (`board/`): the worker that takes the run over tells it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::deliver;
use super::error::ApiError;
use super::run::{Run, Status};

/// Where a background run's completion is POSTed.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Webhook {
    /// An http or https URL.
    url: String,
    /// Headers sent with each delivery (an `Authorization`, say).
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl Webhook {
    /// Refuses a URL that is not http(s) and headers that are not valid.
    pub(crate) fn check(&self) -> Result<(), ApiError> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| {
            ApiError::bad_request(format!("`webhook.url` `{}` is not a URL: {e}", self.url))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ApiError::bad_request(format!(
                "`webhook.url` must be http or https, not `{}`",
                url.scheme()
            )));
        }
        for (name, value) in &self.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                || reqwest::header::HeaderValue::from_str(value).is_err()
            {
                return Err(ApiError::bad_request(format!(
                    "`webhook.headers` has an invalid header `{name}`"
                )));
            }
        }
        Ok(())
    }
}

/// Watches `run` and POSTs its detail to `hook` each time it settles,
/// until it has ended.
pub(crate) fn watch(run: Arc<Run>, hook: Webhook) {
    tokio::spawn(async move {
        let mut headers: Vec<(String, String)> =
            vec![("Content-Type".to_string(), "application/json".to_string())];
        headers.extend(hook.headers.clone());
        let mut changes = run.watch();
        // What was told last: the status and the open questions' ids (a
        // run answered may wait again before this task looks).
        let mut told: Option<(Status, Vec<String>)> = None;
        loop {
            changes.borrow_and_update();
            let now = {
                let inner = run.inner();
                let ids = inner.requests.iter().map(|q| q.id.clone()).collect();
                (inner.status(), ids)
            };
            if now.0 != Status::Running && told.as_ref() != Some(&now) {
                let what = format!("webhook of run `{}`", run.id);
                deliver::post(&hook.url, &headers, &run.detail().to_string(), &what).await;
                if now.0.ended() {
                    return;
                }
                told = Some(now);
            }
            if changes.changed().await.is_err() {
                // The run is gone without settling: nothing more to tell.
                return;
            }
        }
    });
}
