//! troupe's teams as MCP tools: `troupe mcp FILE|DIR` over stdio and
//! `/mcp` on `troupe serve` over streamable HTTP.
//!
//! Each served team is one tool (`handler.rs`): its input is the message
//! for the team, its result the team's answer. A call runs the team
//! (`call.rs`); the run's events become progress notifications when the
//! client sent a progress token (`progress.rs`); a question the team asks
//! (`ask_user`, an approval, a `user:` agent) becomes an elicitation —
//! a request to the client on a 2025-11-25 session, an `InputRequiredResult`
//! the client answers by calling again on the 2026-07-28 stateless
//! revision, the run kept waiting meanwhile (`waiting.rs`); a cancelled
//! call cancels the run.
//!
//! Beside the tools, each config's `serve: {mcp: …}` may declare how its
//! tool takes its input and gives its answer (`tool_io.rs`), and
//! resources, resource templates and prompts (`resources.rs`,
//! `prompts.rs`, with `completion.rs` offering their declared values);
//! `logging.rs` sends the run's events as log messages at the level the
//! client set.

mod asking;
mod call;
mod completion;
mod handler;
mod inner;
mod input_keys;
mod logging;
mod progress;
mod prompts;
mod record;
mod resources;
mod surface;
mod tool_io;
mod waiting;

use std::sync::Arc;

use troupe::Workflow;
use troupe::config::{Config, McpServeSpec};

pub(crate) use handler::TeamServer;
pub(crate) use record::{Recorder, RunRecord};

/// One team offered as a tool.
#[derive(Clone)]
pub(crate) struct McpTeam {
    /// The tool's name: the team's name.
    pub(crate) name: String,
    /// What the tool says it does: the config's `description`.
    pub(crate) description: Option<String>,
    /// The team.
    pub(crate) workflow: Workflow,
    /// Its config: what its `serve: {mcp: …}` declares, and where the
    /// files it names are.
    pub(crate) config: Config,
}

impl McpTeam {
    /// The team `name` of `config`, running `workflow`.
    pub(crate) fn new(name: String, config: Config, workflow: Workflow) -> Self {
        McpTeam {
            name,
            description: config.spec().description.clone(),
            workflow,
            config,
        }
    }

    /// What its config declares for MCP (nothing: the defaults).
    pub(crate) fn mcp(&self) -> McpServeSpec {
        self.config
            .spec()
            .serve
            .as_ref()
            .and_then(|s| s.mcp.clone())
            .unwrap_or_default()
    }
}

/// A permit to run, held while a call's run is under way (`troupe serve`'s
/// `--max-runs`); an error says why none is free.
pub(crate) type Admit = Arc<dyn Fn() -> Result<Box<dyn Send + Sync>, String> + Send + Sync>;
