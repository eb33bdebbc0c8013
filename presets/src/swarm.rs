//! [`Swarm`]: agents hand control to each other.

use std::sync::Arc;

use troupe_runtime::{Graph, RouterBuilder, Workflow, graph::Condition, message::USER};

use crate::error::PresetError;
use crate::team::{Team, team_methods};

/// The current speaker keeps the turn until it hands off (through its
/// handoff tools) to another participant; a handoff to `user` ends the run
/// and returns control to the caller, and running again with the user's
/// reply resumes with the agent that handed off. Every participant sees
/// every message.
///
/// As a workflow: a transition from each participant to each other on
/// `handoff_to(target)`, a self-transition while no handoff is made, a
/// broadcast router, and an entry point read from the last handoff.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_presets::Swarm;
/// use troupe_runtime::{FnAgent, Message, RunContext, Thread};
///
/// let triage = FnAgent::sync("triage", |_: &Thread| Ok(Message::handoff("", "billing", "a refund")))
///     .with_handoffs(["billing"]);
/// let billing = FnAgent::sync("billing", |_: &Thread| Ok(Message::handoff("", "user", "which order?")))
///     .with_handoffs(["user"]);
/// let swarm = Swarm::builder().participant(triage).participant(billing).build()?;
/// let result = swarm.run_task("I want my money back", &RunContext::new()).await?;
/// assert_eq!(result.final_response.unwrap().handoff_target(), Some("user"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Swarm;

impl Swarm {
    /// Starts describing a swarm.
    pub fn builder() -> SwarmBuilder {
        SwarmBuilder::default()
    }
}

/// Builds a [`Swarm`] workflow.
#[derive(Default)]
pub struct SwarmBuilder {
    team: Team,
}

impl SwarmBuilder {
    team_methods!();

    /// Builds the swarm as a workflow. The first participant must be able
    /// to hand off.
    pub fn build(self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("swarm");
        let names = self.team.names();
        let Some(first) = self.team.agents.first() else {
            return Err(PresetError::NoParticipants(name));
        };
        if first.handoffs().is_empty() {
            return Err(PresetError::FirstCannotHandOff {
                team: name,
                agent: first.name().to_string(),
            });
        }
        let no_handoff = Condition::func("no handoff", |turn| {
            turn.last().is_none_or(|m| m.handoff_target().is_none())
        });
        let mut graph = Graph::builder()
            .add_agents(self.team.agents.iter().cloned())
            .start(names[0].clone())
            // A conversation: bounded by the stop condition, not per loop.
            .loop_limit(u32::MAX);
        for from in &names {
            graph = graph.add_loop(from.clone(), from.clone(), no_handoff.clone());
            for to in names.iter().filter(|n| *n != from) {
                graph = graph.add_transition(
                    from.clone(),
                    to.clone(),
                    Condition::handoff_to(to.clone()),
                );
            }
        }
        let participants: Arc<Vec<String>> = Arc::new(names.clone());
        let graph = graph
            .entry(move |thread, _state| resume_at(thread, &participants))
            .build()?;
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph)
            .router(RouterBuilder::default());
        workflow = self.team.configure_conversation(workflow);
        Ok(workflow.build()?)
    }
}

/// Who speaks when a swarm's run starts: the agent that handed off to the
/// user, or the target of the last handoff; otherwise the first participant.
fn resume_at(thread: &troupe_runtime::Thread, participants: &[String]) -> Option<String> {
    let last = thread
        .messages()
        .iter()
        .rev()
        .find(|m| m.handoff_target().is_some())?;
    let target = last.handoff_target()?;
    let speaker = if target == USER {
        &*last.source
    } else {
        target
    };
    participants.iter().find(|p| *p == speaker).cloned()
}
