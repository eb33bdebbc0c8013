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

    /// This hook for a run over `thread`, reporting through it.
    fn over(&self, thread: &Arc<Thread>) -> Self {
        Progress {
            lent: Arc::as_ptr(thread) as usize,
            report: self.report.clone(),
        }
    }
}

/// How a run that an agent starts over a thread of its own — not the one
/// its turn was lent: a map's workers, a planner's plan — reports its
/// progress as part of the turn's, so that the checkpoints above hold it
/// and a turn cut short goes on from it instead of starting over. Made by
/// [`RunContext::relay_progress`](crate::RunContext::relay_progress);
/// handed to [`Workflow::run_relayed`](crate::Workflow::run_relayed) or
/// [`RunContext::with_progress_relay`](crate::RunContext::with_progress_relay).
#[derive(Clone, Debug)]
pub struct ProgressRelay {
    hook: Progress,
}

impl ProgressRelay {
    /// A relay through `hook`, each report first put into the turn's
    /// thread by `wrap`.
    pub(crate) fn new(
        hook: &Progress,
        wrap: impl Fn(Thread) -> Thread + Send + Sync + 'static,
    ) -> Self {
        let outer = hook.report.clone();
        ProgressRelay {
            hook: Progress {
                lent: 0,
                report: Arc::new(move |thread| outer(wrap(thread))),
            },
        }
    }

    /// Reports `thread` (put into the turn's by the relay's `wrap`) as the
    /// turn's progress now: what a run over it would carry on from (a
    /// run's input before it starts, say, so that a checkpoint holds what
    /// the agent decided before the run reports anything itself).
    pub fn report(&self, thread: Thread) {
        self.hook.report(thread);
    }

    /// The hook a run over `thread` reports through.
    pub(crate) fn hook_over(&self, thread: &Arc<Thread>) -> Progress {
        self.hook.over(thread)
    }

    /// The hook, for a run started with it explicitly.
    pub(crate) fn into_hook(self) -> Progress {
        self.hook
    }
}
