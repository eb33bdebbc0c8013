//! # troupe-planning
//!
//! Planning: a plan is a DAG of steps, compiled into a
//! [`Workflow`](troupe_runtime::Workflow) on the
//! graph engine, and a [`PlanningAgent`] asks a model for one. A compiled
//! plan is a plain workflow, so it is an agent too: it nests in presets and
//! other workflows like any participant.
//!
//! - **From text** ([`Plan::from_text`], parsed by [`PlanGraph`]): one path
//!   per line, `A -> B -> C`; `,` inside a position means alternatives,
//!   expanded as a Cartesian product (`A -> B, C -> D` is A→B→D and
//!   A→C→D); lines that name the same step share its node. Errors carry
//!   their line number.
//! - **From action groups** ([`ActionGroups`], [`Plan::from_groups`]):
//!   `[[A], [B, C], [D]]`, a group of several running in parallel and
//!   merged by a [`Summarizer`].
//! - **Result passing** ([`ResultPassing`], [`ResultScope`]): what a step
//!   receives of earlier steps — nothing, their results as attachments,
//!   their messages, or a custom merge — from its predecessors or from
//!   every step before it.
//! - **Stop flags** ([`StopFlag`]): a step ends the plan early, as a
//!   success or as a failure.
//! - **Compiling** ([`Plan::compile_with`], [`CompileOptions`]): a plan is a
//!   plain workflow, so it nests, streams events, checkpoints and runs
//!   under either scheduler.
//! - **Planning** ([`PlanningAgent`]): a model writes the sub-problems and
//!   their graph; the agent compiles and runs the plan with the agents it
//!   has, retrying answers that do not parse.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use troupe_planning::{Plan, PlanStep};
//! use troupe_runtime::{Agent, FnAgent, RunContext, Thread};
//!
//! // One agent serves every step: it answers the request (its last message)
//! // and says how many earlier results it was given.
//! let worker: Arc<dyn Agent> = Arc::new(FnAgent::sync("worker", |t: &Thread| {
//!     let request = t.last().map(|m| m.text_content().into_owned()).unwrap_or_default();
//!     let attached = t.messages().iter().map(|m| m.text_content().matches("<attachment").count()).sum::<usize>();
//!     Ok(format!("{request} (given {attached} results)"))
//! }));
//! let steps = [
//!     PlanStep::shared("RECIPE", worker.clone(), "suggest a Starbucks drink"),
//!     PlanStep::shared("ORDER", worker.clone(), "order it"),
//!     PlanStep::shared("LUNCH", worker.clone(), "order lunch at McDonald's"),
//! ];
//! let plan = Plan::from_text("RECIPE -> ORDER\nLUNCH", steps)?;
//! let workflow = plan.compile()?;
//! let result = workflow.run_task("get me a drink and lunch", &RunContext::new()).await?;
//! let said = |id: &str| result.messages.iter().find(|m| &*m.source == id).map(|m| m.text_content().into_owned());
//! assert_eq!(said("ORDER").as_deref(), Some("order it (given 1 results)"));
//! assert_eq!(said("LUNCH").as_deref(), Some("order lunch at McDonald's (given 0 results)"));
//! # Ok(()) }
//! ```

mod answer;
mod compile;
mod error;
mod flags;
mod groups;
mod passing;
mod plan;
mod planner;
pub mod prelude;
mod reasoner;
mod step;
mod summarizer;
mod text;

// Plans and how they are written.
pub use groups::ActionGroups;
pub use plan::Plan;
pub use step::PlanStep;
pub use summarizer::{SummarizeFn, Summarizer};
pub use text::PlanGraph;
// Compiling, and what steps receive of earlier ones.
pub use compile::CompileOptions;
pub use flags::{PLAN_STOP, StopFlag};
pub use passing::{
    MergeFn, ResultContent, ResultPassing, ResultScope, StepInput, StepResult, render_attachments,
};
// The planning agent, and the answers it reads.
pub use answer::{PlanFormat, PlanSpec, SpecStep};
pub use planner::{Planned, PlanningAgent, PlanningAgentBuilder};
// The reasoning agent (seeds 000 and 003), and what its turns answer.
pub use reasoner::{
    ANSWER_RULES, Action, ActionCall, ActionResult, BranchStart, MEMORY_KEY, NextActions,
    REASONER_KEY, ReasonerAgent, ReasonerAgentBuilder, ReasonerAnswer, STATUS_KEY, reasoner_rules,
    render_memories, render_results,
};
// What can go wrong: a plan (with the line at fault), a model's answer.
pub use answer::AnswerError;
pub use error::PlanError;
// Metadata keys on the messages of plan runs.
pub use passing::{INPUT_KEY, REQUEST_KEY};
pub use planner::{PLAN_KEY, STEP_KEY};
pub use step::MERGED_KEY;

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
