//! # troupe
//!
//! A Rust runtime for teams of LLM agents. Every agent is an actor with an
//! inbox; a router decides which messages reach which inbox; a [`Workflow`]
//! composes agents — and other workflows, since a workflow is itself an
//! [`Agent`] — and runs them on [ractor](https://docs.rs/ractor) actors
//! until nothing is left to do or a [`StopCondition`] holds.
//!
//! This crate is the facade: it re-exports the runtime (messages, threads,
//! agents, workflows, stop conditions, events) at its root, the router
//! (inboxes and routes) as [`router`], model-backed agents and tools as
//! [`agents`], ready teams as [`presets`], plans compiled into workflows as
//! [`planning`], agents on other nodes as [`cluster`], and loads
//! declarative YAML teams with [`config`].
//!
//! ## A router-only workflow
//!
//! No graph, no model: three closures and the routes between them. The
//! router validates the routes against the participants when the workflow
//! is built; the run starts every agent whose inbox holds a full batch, and
//! ends when none can run.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe::{FnAgent, InboxConfig, Router, RunContext, RunStatus, Thread, Workflow};
//!
//! fn last_text(t: &Thread) -> String {
//!     t.last().map(|m| m.text_content().into_owned()).unwrap_or_default()
//! }
//!
//! // Two drafters answer the same brief; an editor waits for both drafts.
//! let terse = FnAgent::sync("terse", |t: &Thread| Ok(format!("{} (short)", last_text(t))));
//! let verbose = FnAgent::sync("verbose", |t: &Thread| Ok(format!("{} (long)", last_text(t))));
//! let editor = FnAgent::sync("editor", |t: &Thread| Ok(format!("picked from {} drafts", t.len())));
//!
//! let team = Workflow::builder()
//!     .name("drafting")
//!     .participant(terse)
//!     .participant(verbose)
//!     .participant(editor)
//!     .router(
//!         Router::builder()
//!             .add_route("user", "terse")
//!             .add_route("user", "verbose")
//!             // One editor turn takes both drafts at once.
//!             .add_route_with(["terse", "verbose"], "editor", InboxConfig::new().batch_size(2))
//!             .output("editor"),
//!     )
//!     .build()?;
//!
//! let result = team.run_task("a haiku about actors", &RunContext::new()).await?;
//! assert_eq!(result.status, RunStatus::Completed);
//! assert_eq!(result.final_text(), "picked from 2 drafts");
//! assert_eq!(result.turns, 3);
//! # Ok(()) }
//! ```
//!
//! The [`router`] module has the pieces a router is made of ([`router::Inbox`],
//! [`router::Envelope`], drop reasons, validation problems) for code that
//! drives inboxes itself.

pub use troupe_runtime::*;

/// Declarative YAML teams: the config schema, validation with located
/// errors, and building workflows from a config (the `troupe-config` crate).
pub use troupe_config as config;

/// Agents on other processes and machines: nodes, remote agents,
/// placement (the `troupe-cluster` crate).
pub use troupe_cluster as cluster;

/// Model clients, tools (functions, MCP), `ChatAgent`, user proxy (the
/// `troupe-agents` crate).
pub use troupe_agents as agents;

/// Ready teams: Sequential, MapReduce, RoundRobinGroupChat,
/// SelectorGroupChat, Swarm (the `troupe-presets` crate).
pub use troupe_presets as presets;

/// Plans compiled into workflows: text plans, action groups, result
/// passing, and a planning agent that asks a model for the plan (the
/// `troupe-planning` crate).
pub use troupe_planning as planning;

/// Inboxes and routes: who receives whose messages, and when a participant
/// has enough of them to run (the `troupe-router` crate).
pub use troupe_router as router;

// The README's snippets are compiled and run as doc tests, so the tour it
// gives cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeSnippets;

/// The preludes of the runtime, the agents, the presets and the config
/// crate in one, for a glob import (`use troupe::prelude::*`).
pub mod prelude {
    pub use troupe_agents::prelude::*;
    pub use troupe_config::prelude::*;
    pub use troupe_presets::prelude::*;
    pub use troupe_runtime::prelude::*;
}
