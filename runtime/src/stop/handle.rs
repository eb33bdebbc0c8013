//! [`StopHandle`]: the caller's way to stop a run from outside.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A handle the caller keeps to stop a run from outside
/// ([`StopCondition::External`](crate::StopCondition::External)). The run stops gracefully: turns already
/// under way finish, no new turn starts. The handle stays set until
/// [`StopHandle::reset`].
#[derive(Clone, Default)]
pub struct StopHandle {
    inner: Arc<HandleInner>,
}

#[derive(Default)]
struct HandleInner {
    set: AtomicBool,
    notify: Notify,
}

impl fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopHandle")
            .field("set", &self.is_set())
            .finish()
    }
}

impl StopHandle {
    /// A handle that is not set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks every run watching this handle to stop.
    pub fn stop(&self) {
        self.inner.set.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }
    /// Whether [`StopHandle::stop`] was called (and not reset since).
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::SeqCst)
    }
    /// Clears the handle so later runs are not stopped by it.
    pub fn reset(&self) {
        self.inner.set.store(false, Ordering::SeqCst);
    }
    /// Completes once the handle is set.
    pub async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}
