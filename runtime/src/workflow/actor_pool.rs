//! Agent actors kept between runs of one workflow.
//!
//! Spawning an actor (its mailbox, its task, its place in ractor's
//! registry and supervision tree) costs more than a turn. A workflow run
//! again and again — a graph invoked per request, a team per chat message —
//! would pay it for every participant of every run. So a run that ends
//! cleanly hands its idle agent actors back here, unlinked from its
//! supervisor, and the next run takes them and links them to its own.
//!
//! At most one actor per participant is kept: concurrent runs spawn their
//! own, and whatever does not fit is stopped with the run that used it. The
//! pool stops what it holds when the workflow's last clone is dropped.

use std::collections::HashMap;
use std::sync::Mutex;

use ractor::{ActorRef, ActorStatus};

use super::protocol::AgentMsg;

/// Idle agent actors by participant index.
#[derive(Default)]
pub(crate) struct ActorPool {
    idle: Mutex<HashMap<usize, ActorRef<AgentMsg>>>,
}

impl ActorPool {
    fn idle(&self) -> std::sync::MutexGuard<'_, HashMap<usize, ActorRef<AgentMsg>>> {
        // A map of handles stays consistent whatever panicked while it was
        // locked.
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle actor for participant `index`, if one is kept and alive.
    pub(crate) fn take(&self, index: usize) -> Option<ActorRef<AgentMsg>> {
        self.idle()
            .remove(&index)
            .filter(|a| a.get_status() == ActorStatus::Running)
    }

    /// Keeps `actor` for participant `index`; gives it back if one is kept
    /// already.
    pub(crate) fn give(
        &self,
        index: usize,
        actor: ActorRef<AgentMsg>,
    ) -> Result<(), ActorRef<AgentMsg>> {
        let mut idle = self.idle();
        if idle.contains_key(&index) {
            return Err(actor);
        }
        idle.insert(index, actor);
        Ok(())
    }
}

impl Drop for ActorPool {
    fn drop(&mut self) {
        for (_, actor) in self.idle().drain() {
            actor.stop(None);
        }
    }
}

impl std::fmt::Debug for ActorPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorPool")
            .field("idle", &self.idle().len())
            .finish()
    }
}
