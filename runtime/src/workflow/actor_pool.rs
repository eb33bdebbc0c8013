//! The agent actors a workflow shares between its runs.
//!
//! Spawning an actor (its mailbox, its task, its place in ractor's
//! registry) costs more than a turn, and its mailbox holds ~14 KiB. A
//! workflow run again and again — a graph invoked per request, a team per
//! chat message — or many times at once — a chatbot's thousands of
//! conversations — would pay that for every participant of every run. So
//! a workflow keeps one actor per participant, spawned when the first run
//! needs it, and every run sends that participant's turns there.
//!
//! An agent actor never waits on a turn in its handler (see
//! `agent_actor`), so one actor serves any number of runs at once; a run
//! sends a participant at most one turn at a time, so each run's turns of
//! a participant stay in order. A run supervises its turns through their
//! tickets (see `protocol`): a turn that fails, panics, or is lost with a
//! stopped actor is reported to the run it belongs to, and to no other. An
//! actor found dead (its runtime shut down) is replaced. The pool stops the
//! actors it holds when the workflow's last clone is dropped.

use std::sync::{Arc, Mutex};

use ractor::{ActorRef, ActorStatus};

use super::agent_gate::AgentGate;
use super::protocol::AgentMsg;

/// A participant's agent actor and the gate it shares with the runs
/// (`agent_gate`).
#[derive(Clone)]
pub(crate) struct AgentHandle {
    /// The actor: the participant's ordering point.
    pub(crate) actor: ActorRef<AgentMsg>,
    /// Who may poll a turn of the participant now.
    pub(crate) gate: Arc<AgentGate>,
}

/// The shared agent actors, by participant index.
#[derive(Default)]
pub(crate) struct ActorPool {
    actors: Mutex<Vec<Option<AgentHandle>>>,
}

impl ActorPool {
    fn actors(&self) -> std::sync::MutexGuard<'_, Vec<Option<AgentHandle>>> {
        // A list of handles stays consistent whatever panicked while it was
        // locked.
        self.actors.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Participant `index`'s shared actor, if one is up.
    pub(crate) fn get(&self, index: usize) -> Option<AgentHandle> {
        self.actors()
            .get(index)
            .and_then(Option::as_ref)
            .filter(|a| alive(&a.actor))
            .cloned()
    }

    /// Shares `actor`, just spawned, as participant `index`'s; returns the
    /// actor to use: `actor`, or the one another run shared first (then
    /// `actor` is stopped).
    pub(crate) fn share(&self, index: usize, actor: AgentHandle) -> AgentHandle {
        let mut actors = self.actors();
        if actors.len() <= index {
            actors.resize(index + 1, None);
        }
        if let Some(kept) = actors[index].as_ref().filter(|a| alive(&a.actor)) {
            let kept = kept.clone();
            drop(actors);
            actor.actor.stop(None);
            return kept;
        }
        actors[index] = Some(actor.clone());
        actor
    }

    /// Forgets participant `index`'s actor if it is `actor`: it no longer
    /// takes messages.
    pub(crate) fn evict(&self, index: usize, actor: &ActorRef<AgentMsg>) {
        let mut actors = self.actors();
        if let Some(slot) = actors.get_mut(index)
            && slot
                .as_ref()
                .is_some_and(|a| a.actor.get_id() == actor.get_id())
        {
            *slot = None;
        }
    }
}

/// Whether `actor` takes messages (one still starting queues them).
fn alive(actor: &ActorRef<AgentMsg>) -> bool {
    matches!(
        actor.get_status(),
        ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading
    )
}

impl Drop for ActorPool {
    fn drop(&mut self) {
        for handle in self.actors().drain(..).flatten() {
            handle.actor.stop(None);
        }
    }
}

impl std::fmt::Debug for ActorPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorPool")
            .field("actors", &self.actors().iter().flatten().count())
            .finish()
    }
}
