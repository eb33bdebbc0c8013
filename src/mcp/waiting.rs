//! Runs waiting for a stateless (2026-07-28) client's answers: the call
//! that asked returned an `InputRequiredResult` whose `requestState` is an
//! opaque handle to the run kept here; the client's next call with that
//! handle and its `inputResponses` runs it on. The state stays on the
//! server, so a tampered handle names no run. Unanswered runs are
//! cancelled after [`KEPT_FOR`], or when more than [`MOST`] wait.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use troupe::{InputRequest, RunContext, Thread};

use super::progress::Events;

/// How long a run waits for its answers.
const KEPT_FOR: Duration = Duration::from_secs(3600);

/// How many runs may wait at once (the oldest goes first).
const MOST: usize = 1000;

/// A run waiting for answers.
pub(super) struct Parked {
    /// The team (tool) it runs.
    pub(super) team: String,
    /// The thread it ended waiting with.
    pub(super) thread: Thread,
    /// The questions open.
    pub(super) requests: Vec<InputRequest>,
    /// Its context (events, cancellation), kept for its next stretch.
    pub(super) ctx: RunContext,
    /// Its events.
    pub(super) events: Events,
    since: Instant,
}

impl Parked {
    /// A run waiting from now.
    pub(super) fn new(
        team: String,
        thread: Thread,
        requests: Vec<InputRequest>,
        ctx: RunContext,
        events: Events,
    ) -> Self {
        Parked {
            team,
            thread,
            requests,
            ctx,
            events,
            since: Instant::now(),
        }
    }
}

/// The runs waiting, by handle.
#[derive(Default)]
pub(super) struct Waiting {
    runs: Mutex<HashMap<String, Parked>>,
}

impl Waiting {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Parked>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `run` until it is answered; its handle.
    pub(super) fn park(&self, run: Parked) -> String {
        let handle = new_handle();
        let mut runs = self.lock();
        runs.retain(|_, p| {
            let keep = p.since.elapsed() < KEPT_FOR;
            if !keep {
                p.ctx.cancel();
            }
            keep
        });
        while runs.len() >= MOST {
            let oldest = runs
                .iter()
                .min_by_key(|(_, p)| p.since)
                .map(|(h, _)| h.clone());
            match oldest.and_then(|h| runs.remove(&h)) {
                Some(p) => p.ctx.cancel(),
                None => break,
            }
        }
        runs.insert(handle.clone(), run);
        handle
    }

    /// Takes the run `handle` names out, if it waits.
    pub(super) fn take(&self, handle: &str) -> Option<Parked> {
        self.lock().remove(handle)
    }

    /// Puts a run back under the handle it had.
    pub(super) fn put_back(&self, handle: String, run: Parked) {
        self.lock().insert(handle, run);
    }
}

/// 128 random bits as hex.
fn new_handle() -> String {
    format!("troupe-run-{:032x}", fastrand::u128(..))
}
