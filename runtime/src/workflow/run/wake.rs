//! The wake-up for partial batches: when an inbox holds less than a batch
//! and has a max wait, the run asks to be woken when the wait is over.

use std::time::{Duration, SystemTime};

use crate::workflow::protocol::{RunAddr, RunMsg};

/// The run's one pending wake-up (the earliest asked for).
#[derive(Default)]
pub(super) struct Wake {
    /// Which wake-up is current; a `RunMsg::Wake` of another is stale.
    generation: u64,
    at: Option<SystemTime>,
    /// Nothing else is under way: the run waits for this wake-up and must
    /// not end before it.
    held: bool,
}

impl Wake {
    /// Asks `myself` to be woken at `at`, unless an earlier wake-up is
    /// already set.
    pub(super) fn arm(&mut self, at: SystemTime, myself: &RunAddr) {
        if self.at.is_some_and(|w| w <= at) {
            return;
        }
        self.generation += 1;
        self.at = Some(at);
        let generation = self.generation;
        let delay = at
            .duration_since(crate::clock::now())
            .unwrap_or(Duration::ZERO);
        myself.send_after(delay, move || RunMsg::Wake { generation });
    }

    /// Keeps the run alive until the wake-up.
    #[inline]
    pub(super) fn hold(&mut self) {
        self.held = true;
    }

    /// Lets the run end without waiting for the wake-up.
    #[inline]
    pub(super) fn release(&mut self) {
        self.held = false;
    }

    /// Whether the run waits for the wake-up.
    #[inline]
    pub(super) fn is_held(&self) -> bool {
        self.held
    }

    /// Wake-up `generation` arrived; returns whether it is the current one
    /// (then it is spent, and no longer holds the run).
    pub(super) fn woke(&mut self, generation: u64) -> bool {
        if generation != self.generation {
            return false;
        }
        self.at = None;
        self.held = false;
        true
    }
}
