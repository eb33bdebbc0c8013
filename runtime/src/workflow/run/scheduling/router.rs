//! The router's scheduling, for a run without a graph: a participant runs
//! when its inbox holds a full batch (up to the concurrency limit); when
//! nothing runs, partial batches wait for their max wait or are flushed.

use troupe_router::Readiness;

use super::schedule::{Drive, Schedule};
use crate::workflow::protocol::RunAddr;
use crate::workflow::run::core::RunCore;
use crate::workflow::run::replies::Applied;

/// Runs by inbox readiness (see the module's documentation).
pub(in crate::workflow::run) struct Router;

impl Schedule for Router {
    async fn drive(&mut self, core: &mut RunCore, myself: &RunAddr) -> Drive {
        let limit = core.spec.max_concurrency.unwrap_or(usize::MAX);
        while core.in_flight() < limit {
            let Some(i) = core.inboxes.pop_dirty() else {
                break;
            };
            if core.phase.is_running() && !core.parts.busy(i) {
                core.try_start(i, false, myself).await;
            }
        }
        if core.in_flight() > 0 || !core.phase.is_running() || core.inboxes.queued() == 0 {
            return Drive::Done;
        }
        // Nothing runs: partial batches either wait for their max wait or,
        // with none set, are flushed so no message is stranded.
        let now = core.inboxes.now();
        for i in 0..core.parts.len() {
            if core.inboxes.is_empty(i) || !core.phase.is_running() {
                continue;
            }
            match core.inboxes.readiness(i, now) {
                Readiness::Waiting { until: Some(t) } => {
                    core.wake.arm(t, myself);
                    core.wake.hold();
                    return Drive::Done;
                }
                Readiness::Ready => core.try_start(i, false, myself).await,
                _ => core.try_start(i, true, myself).await,
            }
        }
        Drive::Done
    }

    /// The participant's inbox is looked at again on the next drive (what
    /// it produced was routed as the reply was applied).
    #[inline]
    fn took(&mut self, core: &mut RunCore, index: usize, _: Applied) {
        core.inboxes.mark_dirty(index);
    }
}
