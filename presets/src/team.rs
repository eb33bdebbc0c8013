//! What every preset has: a name, participants, a stop condition and a turn
//! limit.

use std::sync::Arc;

use troupe_runtime::store::CheckpointStore;
use troupe_runtime::{Agent, StopCondition, WorkflowBuilder};

/// The parts every team shares, gathered by each preset's builder.
#[derive(Default)]
pub(crate) struct Team {
    pub(crate) name: Option<String>,
    pub(crate) description: String,
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) stop: Option<StopCondition>,
    pub(crate) max_turns: Option<u64>,
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    /// Deliveries between checkpoints besides the superstep ones
    /// (`WorkflowBuilder::checkpoint_every`).
    pub(crate) every: Option<u64>,
    /// Messages kept per thread (`WorkflowBuilder::max_history`).
    pub(crate) max_history: Option<usize>,
    /// The answering agents (`WorkflowBuilder::answer`).
    pub(crate) answer: Vec<String>,
}

impl Team {
    pub(crate) fn name_or(&self, default: &str) -> String {
        self.name.clone().unwrap_or_else(|| default.to_string())
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name().to_string()).collect()
    }

    /// Gives the team's workflow its stop condition, history limit and
    /// checkpoint store (a graph team checkpoints after each superstep).
    pub(crate) fn configure(&self, mut workflow: WorkflowBuilder) -> WorkflowBuilder {
        if let Some(n) = self.max_history {
            workflow = workflow.max_history(n);
        }
        for name in &self.answer {
            workflow = workflow.answer(name.clone());
        }
        if let Some(stop) = self.stop_condition() {
            workflow = workflow.stop_condition(stop);
        }
        if let Some(store) = &self.store {
            workflow = workflow.checkpoint_store(store.clone());
            if let Some(n) = self.every {
                workflow = workflow.checkpoint_every(n);
            }
        }
        workflow
    }

    /// As [`Team::configure`], for a conversation team (round robin,
    /// selector, swarm): with a store and no `checkpoint_every` of its own,
    /// it also checkpoints after every delivery, so every turn is saved
    /// however the team is scheduled.
    pub(crate) fn configure_conversation(&self, workflow: WorkflowBuilder) -> WorkflowBuilder {
        let workflow = self.configure(workflow);
        match (&self.store, self.every) {
            (Some(_), None) => workflow.checkpoint_every(1),
            _ => workflow,
        }
    }

    /// The stop condition with the turn limit folded in.
    pub(crate) fn stop_condition(&self) -> Option<StopCondition> {
        match (self.stop.clone(), self.max_turns) {
            (Some(s), Some(n)) => Some(s | StopCondition::max_turns(n)),
            (Some(s), None) => Some(s),
            (None, Some(n)) => Some(StopCondition::max_turns(n)),
            (None, None) => None,
        }
    }
}

/// Builder methods every preset shares; each builder has a `team: Team`.
macro_rules! team_methods {
    () => {
        /// Names the team (its path in events, its name when nested).
        pub fn name(mut self, name: impl Into<String>) -> Self {
            self.team.name = Some(name.into());
            self
        }

        /// Describes the team (for selectors and tools when it is nested).
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.team.description = description.into();
            self
        }

        /// Adds a participant: an agent, or another workflow or team.
        pub fn participant(mut self, agent: impl troupe_runtime::Agent) -> Self {
            self.team.agents.push(std::sync::Arc::new(agent));
            self
        }

        /// Adds shared participants.
        pub fn participants(
            mut self,
            agents: impl IntoIterator<Item = std::sync::Arc<dyn troupe_runtime::Agent>>,
        ) -> Self {
            self.team.agents.extend(agents);
            self
        }

        /// Sets the stop condition.
        pub fn stop_condition(mut self, stop: troupe_runtime::StopCondition) -> Self {
            self.team.stop = Some(stop);
            self
        }

        /// Makes participant `name` the team's answering agent: a run's
        /// final response is the last message it produced rather than the
        /// last message of the run (`WorkflowBuilder::answer`; call it
        /// again to name several).
        pub fn answer(mut self, name: impl Into<String>) -> Self {
            self.team.answer.push(name.into());
            self
        }

        /// Stops after `n` agent turns (besides any stop condition).
        pub fn max_turns(mut self, n: u64) -> Self {
            self.team.max_turns = Some(n);
            self
        }

        /// Keeps at most the last `n` messages in each of the team's
        /// threads and in a run's result (`WorkflowBuilder::max_history`;
        /// by default everything is kept).
        pub fn max_history(mut self, n: usize) -> Self {
            self.team.max_history = Some(n.max(1));
            self
        }

        /// Saves a checkpoint after every superstep (every turn of the
        /// team) and when a run ends, so a run can be resumed
        /// (`Workflow::resume`).
        pub fn checkpoint_store(
            mut self,
            store: std::sync::Arc<dyn troupe_runtime::store::CheckpointStore>,
        ) -> Self {
            self.team.store = Some(store);
            self
        }

        /// With a checkpoint store, also saves a checkpoint once `n`
        /// messages have been delivered since the last one
        /// (`WorkflowBuilder::checkpoint_every`; conversation teams
        /// default to 1). `n` of 0 counts as 1.
        pub fn checkpoint_every(mut self, n: u64) -> Self {
            self.team.every = Some(n.max(1));
            self
        }
    };
}

pub(crate) use team_methods;
