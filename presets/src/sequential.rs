//! [`Sequential`]: agents one after another, each seeing the prior outputs.

use troupe_runtime::{Graph, Router, RouterBuilder, Workflow, graph::NodeInput};

use crate::error::PresetError;
use crate::team::{Team, team_methods};

/// What each step of a [`Sequential`] receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
#[cfg_attr(
    feature = "schema",
    schemars(description = "What each step of a sequence receives.")
)]
pub enum StepFlow {
    /// The task and every earlier step's messages (default).
    #[default]
    AllPrior,
    /// Only the previous step's messages (the task for the first).
    Previous,
    /// One message listing every earlier step's last output by step (the
    /// layout cagent injects).
    PriorOutputs,
}

/// Agents run in the order added; the last one's answer is the result.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_presets::Sequential;
/// use troupe_runtime::{FnAgent, RunContext, Thread};
///
/// let pipeline = Sequential::builder()
///     .participant(FnAgent::sync("draft", |_: &Thread| Ok("draft")))
///     .participant(FnAgent::sync("count", |t: &Thread| Ok(format!("saw {} messages", t.len()))))
///     .build()?;
/// let result = pipeline.run_task("go", &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "saw 2 messages"); // the task and the draft
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Sequential;

impl Sequential {
    /// Starts describing a sequence.
    pub fn builder() -> SequentialBuilder {
        SequentialBuilder::default()
    }
}

/// Builds a [`Sequential`] workflow.
#[derive(Default)]
pub struct SequentialBuilder {
    team: Team,
    flow: StepFlow,
}

impl SequentialBuilder {
    team_methods!();

    /// What each step receives (default [`StepFlow::AllPrior`]).
    pub fn flow(mut self, flow: StepFlow) -> Self {
        self.flow = flow;
        self
    }

    /// Builds the sequence as a workflow: a chain of transitions; the router
    /// (unless only the previous step counts) hands each step the task and
    /// every earlier step's output.
    pub fn build(self) -> Result<Workflow, PresetError> {
        let name = self.team.name_or("sequential");
        let names = self.team.names();
        if names.is_empty() {
            return Err(PresetError::NoParticipants(name));
        }
        let mut graph = Graph::builder().add_agents(self.team.agents.iter().cloned());
        for pair in names.windows(2) {
            graph = graph.add_edge(pair[0].clone(), pair[1].clone());
        }
        if self.flow == StepFlow::PriorOutputs {
            for n in &names[1..] {
                graph = graph.input(n.clone(), NodeInput::PriorOutputs);
            }
        }
        let mut workflow = Workflow::builder()
            .name(name)
            .description(self.team.description.clone())
            .graph(graph.build()?);
        if self.flow != StepFlow::Previous {
            let mut router = RouterBuilder::default();
            for (k, target) in names.iter().enumerate() {
                let mut sources = vec![Router::USER.to_string()];
                sources.extend(names[..k].iter().cloned());
                router = router.add_route(sources, target.clone());
            }
            workflow = workflow.router(router);
        }
        workflow = self.team.configure(workflow);
        Ok(workflow.build()?)
    }
}
