//! [`Progress`]: how a nested run tells the run that lent it its thread
//! where it stands, so that the outer run's checkpoints hold the nested
//! run's progress and not only its thread as the turn began.
//!
//! A run that checkpoints (it has a store, or reports progress itself)
//! hands every turn it starts a hook in the turn's context. A workflow run
//! as that turn's agent, over the very thread the turn was lent, reports
//! its thread — put together as a checkpoint would, its counters inside —
//! at the points a top-level run would checkpoint. Any other run (an
//! agent's helper workflow over a thread of its own) finds no hook: its
//! thread is not the participant's.

use std::fmt;
use std::sync::Arc;

use crate::thread::Thread;

/// The hook of one turn (see the module's documentation).
#[derive(Clone)]
pub(crate) struct Progress {
    /// The address of the thread lent for the turn: only a run over that
    /// thread reports. (Compared while the caller holds that thread, so
    /// the address cannot have been reused.)
    lent: usize,
    report: Arc<dyn Fn(Thread) + Send + Sync>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress").finish_non_exhaustive()
    }
}

impl Progress {
    /// A hook for a turn lent `lent`, reporting through `report`.
    pub(crate) fn new(lent: &Arc<Thread>, report: impl Fn(Thread) + Send + Sync + 'static) -> Self {
        Progress {
            lent: Arc::as_ptr(lent) as usize,
            report: Arc::new(report),
        }
    }

    /// Whether this is the hook of a turn over `thread` itself.
    #[inline]
    pub(crate) fn lent(&self, thread: &Arc<Thread>) -> bool {
        self.lent == Arc::as_ptr(thread) as usize
    }

    /// Reports the run's thread as it stands.
    #[inline]
    pub(crate) fn report(&self, thread: Thread) {
        (self.report)(thread)
    }
}
