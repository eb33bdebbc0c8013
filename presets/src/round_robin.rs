//! [`RoundRobinGroupChat`]: participants take turns in a fixed order.

use troupe_runtime::{Graph, RouterBuilder, Workflow};

use crate::error::PresetError;
use crate::team::{Team, team_methods};

/// Participants speak in turn, in the order added, each seeing every
/// message (a broadcast). As a workflow: a ring of transitions, and a
/// router that delivers every message to every other participant.
/// Running again with the returned thread continues with the next speaker.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_presets::RoundRobinGroupChat;
/// use troupe_runtime::{FnAgent, RunContext, StopCondition, Thread};
///
/// let team = RoundRobinGroupChat::builder()
///     .participant(FnAgent::sync("writer", |_: &Thread| Ok("a draft")))
///     .participant(FnAgent::sync("critic", |_: &Thread| Ok("APPROVE")))
///     .stop_condition(StopCondition::text_mention("APPROVE"))
///     // The team's answer is the writer's draft, not the critic's verdict.
///     .answer("writer")
///     .build()?;
/// let result = team.run_task("write a haiku", &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "a draft");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RoundRobinGroupChat;

impl RoundRobinGroupChat {
    /// Starts describing a round-robin team.
    pub fn builder() -> RoundRobinBuilder {
        RoundRobinBuilder::default()
    }
}

/// Builds a [`RoundRobinGroupChat`] workflow.
#[derive(Default)]
pub struct RoundRobinBuilder {
    team: Team,
}

impl RoundRobinBuilder {
    team_methods!();

    /// Builds the team as a workflow. Without a stop condition or turn
    /// limit the ring would never end, which is an error.
    pub fn build(self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("round_robin");
        let names = self.team.names();
        let Some(first) = names.first() else {
            return Err(PresetError::NoParticipants(name));
        };
        let mut graph = Graph::builder()
            .add_agents(self.team.agents.iter().cloned())
            .start(first.clone())
            // A conversation: bounded by the stop condition, not per loop.
            .loop_limit(u32::MAX);
        for (i, from) in names.iter().enumerate() {
            graph = graph.add_edge(from.clone(), names[(i + 1) % names.len()].clone());
        }
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph.build()?)
            .router(RouterBuilder::default());
        workflow = self.team.configure_conversation(workflow);
        Ok(workflow.build()?)
    }
}
