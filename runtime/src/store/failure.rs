//! [`RunFailure`]: how a run that failed mid-way ended — kept by a store
//! beside the run's checkpoints (see
//! [`CheckpointStore::failure`](super::CheckpointStore::failure)), so a
//! failed run is listed as failed rather than as under way, and no worker
//! sharing the store takes it over as if its process had died.
//!
//! A run's checkpoints say how it ended when it ended well (completed,
//! stopped, cancelled, interrupted, waiting for input); a run that failed
//! has none saying so — its latest checkpoint is one taken while it was
//! under way. The failure is kept apart from the checkpoints, so the
//! checkpoint format does not change, and a store that keeps none (the
//! default) lists such a run as under way, as before.

use std::time::SystemTime;

/// Why and when a run failed.
///
/// ```
/// use troupe_runtime::store::RunFailure;
///
/// let f = RunFailure::new("model `m`: HTTP 500");
/// assert_eq!(f.error, "model `m`: HTTP 500");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    /// What the run failed with (secrets redacted by the caller).
    pub error: String,
    /// When it failed.
    pub failed_at: SystemTime,
}

impl RunFailure {
    /// A failure with `error`, now.
    pub fn new(error: impl Into<String>) -> Self {
        RunFailure {
            error: error.into(),
            failed_at: SystemTime::now(),
        }
    }
}
