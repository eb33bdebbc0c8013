//! The table double texting keeps: each session's latest run, by team and
//! session id, with the session as it was before that run (the policies
//! are `texting.rs`'s).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use troupe::Thread;

use super::run::Run;

/// The session run under way in each session, by team and session id.
///
/// A run's entry goes when it ends (`Texting::ended`); entries of runs
/// that ended otherwise are swept whenever the table has doubled since
/// the last sweep, so admitting a run does not walk every session.
#[derive(Default)]
pub(crate) struct Texting {
    latest: Mutex<HashMap<(String, String), Entry>>,
    sweep_at: AtomicUsize,
}

/// A session's latest run and the session as it was before that run
/// (set when it starts, for a rollback).
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) run: Weak<Run>,
    pub(crate) before: Arc<OnceLock<Option<Thread>>>,
}

impl Texting {
    /// The table, locked (a poisoned lock is taken as it is).
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Entry>> {
        self.latest.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops the entries of runs that ended, when the table (`latest`,
    /// locked) has doubled since the last sweep.
    pub(crate) fn sweep(&self, latest: &mut HashMap<(String, String), Entry>) {
        if latest.len() < self.sweep_at.load(Ordering::Relaxed) {
            return;
        }
        latest.retain(|_, e| e.run.upgrade().is_some_and(|r| !r.inner().status().ended()));
        self.sweep_at
            .store((latest.len() * 2).max(64), Ordering::Relaxed);
    }

    /// Drops session `key`'s entry if it is `run`'s and `run` has ended
    /// (a run waiting for input keeps it: an answer runs it on).
    pub(crate) fn ended(&self, key: &(String, String), run: &Arc<Run>) {
        if !run.inner().status().ended() {
            return;
        }
        let mut latest = self.lock();
        if latest
            .get(key)
            .is_some_and(|e| std::ptr::eq(e.run.as_ptr(), Arc::as_ptr(run)))
        {
            latest.remove(key);
        }
    }
}
