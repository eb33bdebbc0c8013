//! A bounded history ([`WorkflowBuilder::max_history`]): the run's threads
//! and what it produced keep their last `n` messages. While the run goes
//! on, a thread is trimmed back to `n` once it is a quarter over, so the
//! trimming (which moves what remains) costs nothing per message; at the
//! end everything is trimmed to `n`.
//!
//! [`WorkflowBuilder::max_history`]: crate::WorkflowBuilder::max_history

use super::core::RunCore;

/// How long a thread kept to `limit` may grow before it is trimmed.
fn roomy(limit: usize) -> usize {
    limit.saturating_add(limit / 4)
}

impl RunCore {
    /// Keeps slot `slot`'s thread, the run thread and what the run
    /// produced within the history limit, if the workflow has one.
    pub(super) fn keep_history(&mut self, slot: usize) {
        let Some(limit) = self.spec.max_history else {
            return;
        };
        let roomy = roomy(limit);
        if self.threads.slot(slot).len() > roomy {
            self.threads.slot_mut(slot).forget_oldest(limit);
        }
        if self.threads.root().len() > roomy {
            self.forget_oldest(limit);
        }
    }

    /// Trims every thread of the run and what it produced to the history
    /// limit, if the workflow has one (the run is ending).
    pub(super) fn trim_history(&mut self) {
        let Some(limit) = self.spec.max_history else {
            return;
        };
        self.threads.forget_oldest_in_slots(limit);
        self.forget_oldest(limit);
    }

    /// Trims the run thread and what the run produced to `keep` messages.
    fn forget_oldest(&mut self, keep: usize) {
        let gone = self.threads.root_mut().forget_oldest(keep);
        // The run's own messages start that much earlier now.
        self.tally.start_len = self.tally.start_len.saturating_sub(gone);
        let produced = &mut self.tally.produced;
        let extra = produced.len().saturating_sub(keep);
        if extra > 0 {
            produced.drain(..extra);
        }
    }
}
