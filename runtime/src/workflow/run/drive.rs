//! Who runs next: the drive after every message the supervisor handles —
//! the run's own restarts and due checkpoints, then its scheduling's drive
//! (see `scheduling`) — and the run's end once nothing is left in flight.

use super::RunState;
use super::scheduling::{Drive, Schedule};
use crate::workflow::protocol::RunAddr;

impl RunState {
    /// Starts every turn that can start, and finishes the run when nothing
    /// is left to do.
    pub(super) async fn drive(&mut self, myself: &RunAddr) {
        let core = &mut self.core;
        if core.reply.is_none() {
            return;
        }
        for index in std::mem::take(&mut core.restart) {
            if !core.phase.is_failing() && !core.parts.turns_cancelled() {
                core.start_turn(index, Vec::new(), self.scheduling.turn_span(), myself)
                    .await;
            }
        }
        // Both checks run: a checkpoint made due is taken or dropped here.
        let due = core.checkpoints.take_due();
        if core.phase.is_running()
            && (due
                || core
                    .checkpoints
                    .due_every(core.spec.checkpoint_every, core.inboxes.delivered()))
        {
            Box::pin(self.checkpoint_now()).await;
        }
        while self.scheduling.drive(&mut self.core, myself).await == Drive::Checkpoint {
            Box::pin(self.checkpoint_now()).await;
        }
        if self.core.in_flight() == 0 && self.core.reply.is_some() {
            Box::pin(self.finish(myself)).await;
        }
    }
}
