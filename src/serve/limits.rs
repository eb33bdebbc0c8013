//! How much a server takes on: the request body limit (413), the
//! concurrent-run limit (429), the connection limit (503) and the
//! timeouts a connection and a request body are held to.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::conn::Timeouts;
use super::error::ApiError;
use super::settings::Settings;

/// How much a server takes on.
pub(crate) struct Limits {
    /// The largest request body, in bytes.
    pub(crate) max_body: usize,
    /// How many connections may be open at once.
    pub(crate) max_connections: usize,
    /// The header and idle timeouts of a connection.
    pub(crate) timeouts: Timeouts,
    /// How long a request body may take to arrive, from its head.
    pub(crate) body_timeout: Duration,
    /// How many runs may be under way at once.
    max_runs: usize,
    runs: Arc<Semaphore>,
}

impl Limits {
    /// The limits the settings say.
    pub(crate) fn new(s: &Settings) -> Self {
        Limits {
            max_body: s.max_body,
            max_connections: s.max_connections,
            timeouts: Timeouts {
                header: s.header_timeout,
                idle: s.idle_timeout,
            },
            body_timeout: s.body_timeout,
            max_runs: s.max_runs,
            runs: Arc::new(Semaphore::new(s.max_runs)),
        }
    }

    /// A slot for one run, held while it runs; 429 when all are taken.
    pub(crate) fn run_slot(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.runs.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "{} runs are under way, the most this server takes at once (--max-runs); try again shortly",
                    self.max_runs
                ),
            )
        })
    }
}
