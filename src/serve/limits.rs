//! The request body limit (413) and the concurrent-run limit (429).

use std::sync::Arc;

use axum::http::StatusCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// How much a server takes on.
pub(crate) struct Limits {
    /// The largest request body, in bytes.
    pub(crate) max_body: usize,
    /// How many runs may be under way at once.
    max_runs: usize,
    runs: Arc<Semaphore>,
}

impl Limits {
    /// Bodies up to `max_body` bytes, up to `max_runs` runs at once.
    pub(crate) fn new(max_body: usize, max_runs: usize) -> Self {
        Limits {
            max_body,
            max_runs,
            runs: Arc::new(Semaphore::new(max_runs)),
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
