//! # troupe-presets
//!
//! Ready teams, each a plain [`Workflow`](troupe_runtime::Workflow) built on
//! the same engine — a graph, a router, a stop condition — so a preset is
//! an [`Agent`](troupe_runtime::Agent), nests in any other workflow or
//! preset, streams the same events and continues from the thread it
//! returned:
//!
//! | preset | graph | router |
//! |---|---|---|
//! | [`Sequential`] | a chain | each step gets the task and prior outputs |
//! | [`MapReduce`] | mapper → map → reducer | along the transitions |
//! | [`RoundRobinGroupChat`] | a ring | broadcast |
//! | [`SelectorGroupChat`] | selector ⇄ each participant | broadcast |
//! | [`Swarm`] | each → each on `handoff_to` | broadcast |
//! | [`Magentic`] | manager ⇄ each participant | broadcast |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe_presets::{RoundRobinGroupChat, Sequential};
//! use troupe_runtime::{FnAgent, RunContext, StopCondition, Thread};
//!
//! // A round-robin team nested as one step of a sequence.
//! let debate = RoundRobinGroupChat::builder()
//!     .name("debate")
//!     .participant(FnAgent::sync("pro", |_: &Thread| Ok("yes")))
//!     .participant(FnAgent::sync("con", |_: &Thread| Ok("no")))
//!     .max_turns(4)
//!     .build()?;
//! let judge = FnAgent::sync("judge", |t: &Thread| Ok(format!("heard {} messages", t.len())));
//! let pipeline = Sequential::builder().participant(debate).participant(judge).build()?;
//! let result = pipeline.run_task("is Rust fun?", &RunContext::new()).await?;
//! assert_eq!(result.final_text(), "heard 2 messages"); // the task and the debate's verdict
//! # Ok(()) }
//! ```

mod error;
mod magentic;
mod map_reduce;
pub mod prelude;
mod round_robin;
mod selector;
mod sequential;
mod speaker;
mod swarm;
mod team;

pub use error::PresetError;
pub use magentic::{
    Choice, Judgement, Magentic, MagenticBuilder, ProgressLedger, TaskLedger,
    progress_ledger_schema, task_ledger_schema,
};
pub use map_reduce::{DEFAULT_MAX_SUBTASKS, MapReduce, MapReduceBuilder};
pub use round_robin::{RoundRobinBuilder, RoundRobinGroupChat};
pub use selector::{SelectorBuilder, SelectorGroupChat, SelectorInput};
pub use sequential::{Sequential, SequentialBuilder, StepFlow};
pub use speaker::{SpeakerFallback, SpeakerMatch, parse_speaker};
pub use swarm::{Swarm, SwarmBuilder};

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
