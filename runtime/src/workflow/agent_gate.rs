//! The gate an agent actor shares with the runs that send it turns: who
//! may poll a turn of the agent now.
//!
//! The actor is its participant's ordering point: turns are first polled
//! one at a time, in the order they reached it. Most of the time its inbox
//! is empty and it is not polling, and then sending it a turn buys nothing
//! but two mailbox hops (there and back). So a run first tries to claim the
//! gate — one compare-and-swap, which succeeds only when nothing is queued
//! for the actor and nobody polls — and polls the turn itself, on its own
//! task; otherwise it queues the turn in the actor's inbox as before. The
//! actor claims the gate for each turn it polls, waiting (without taking
//! its next message) while a run polls one inline, so the agent's first
//! polls never overlap and a turn queued in its inbox is never overtaken
//! by one run inline.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Set while a turn of the agent is being polled (by a run or the actor).
const POLLING: usize = 1;
/// One turn queued in the actor's inbox (the count is kept above the bit).
const QUEUED: usize = 2;

/// The gate of one agent actor (see the module's documentation).
#[derive(Default)]
pub(crate) struct AgentGate {
    /// `POLLING` and `QUEUED` × the turns in the actor's inbox.
    state: AtomicUsize,
    /// Wakes the actor waiting for a run's inline poll to end.
    released: Notify,
}

impl AgentGate {
    /// Claims the gate for a poll on the caller's task: only when the actor
    /// has nothing queued and nobody polls. Released when the claim drops.
    #[inline]
    pub(crate) fn try_inline(&self) -> Option<InlineClaim<'_>> {
        self.state
            .compare_exchange(0, POLLING, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| InlineClaim(self))
    }

    /// Counts a turn about to be sent to the actor's inbox.
    #[inline]
    pub(crate) fn queue(&self) {
        self.state.fetch_add(QUEUED, Ordering::AcqRel);
    }

    /// Uncounts a turn that did not reach the actor's inbox.
    #[inline]
    pub(crate) fn unqueue(&self) {
        self.state.fetch_sub(QUEUED, Ordering::AcqRel);
    }

    /// The actor's claim for a queued turn it polls: waits while a run
    /// polls one inline. Released (and the turn uncounted) by
    /// [`AgentGate::polled`].
    pub(crate) async fn claim_queued(&self) {
        loop {
            let state = self.state.load(Ordering::Acquire);
            if state & POLLING == 0 {
                if self
                    .state
                    .compare_exchange(state, state | POLLING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            // A run's inline poll ends with a notice, stored if we are not
            // waiting yet (the turn we poll is counted, so it is sent).
            self.released.notified().await;
        }
    }

    /// The actor polled its queued turn: the gate opens, the turn leaves
    /// the count.
    #[inline]
    pub(crate) fn polled(&self) {
        self.state.fetch_sub(QUEUED | POLLING, Ordering::AcqRel);
    }
}

/// A run's claim of the gate for one inline poll (see
/// [`AgentGate::try_inline`]).
pub(crate) struct InlineClaim<'a>(&'a AgentGate);

impl Drop for InlineClaim<'_> {
    fn drop(&mut self) {
        let was = self.0.state.fetch_and(!POLLING, Ordering::AcqRel);
        // A turn queued meanwhile: its actor may be waiting for the gate.
        if was >= QUEUED {
            self.0.released.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_claim_needs_an_empty_inbox_and_an_open_gate() {
        let gate = AgentGate::default();
        let claim = gate.try_inline();
        assert!(claim.is_some());
        assert!(gate.try_inline().is_none(), "one poll at a time");
        drop(claim);
        assert!(gate.try_inline().is_some());
        gate.queue();
        assert!(gate.try_inline().is_none(), "a queued turn goes first");
        gate.unqueue();
        assert!(gate.try_inline().is_some());
    }

    #[tokio::test]
    async fn the_actor_waits_for_an_inline_poll_to_end() {
        let gate = std::sync::Arc::new(AgentGate::default());
        let claim = gate.try_inline();
        gate.queue();
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.claim_queued().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "the inline poll holds the gate");
        drop(claim);
        waiter.await.unwrap();
        assert!(gate.try_inline().is_none(), "the actor polls now");
        gate.polled();
        assert!(gate.try_inline().is_some());
    }
}
