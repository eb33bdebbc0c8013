//! The table double texting keeps: each session's latest run, by team and
//! session id, with the session as it was before that run (the policies
//! are `texting.rs`'s).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use troupe::Thread;

use super::run::Run;

/// The session run under way in each session, by team and session id.
#[derive(Default)]
pub(crate) struct Texting {
    latest: Mutex<HashMap<(String, String), Entry>>,
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
}
