//! From a checked config to a running [`Workflow`](troupe_runtime::Workflow):
//! model clients (or scripts), tools (built-in ones and MCP servers),
//! agents, nested workflows, and the checkpoint store.
//!
//! A [`Ctx`](ctx::Ctx) holds what building one config file needs; its
//! methods are spread over one file per topic (models, tools, agents,
//! participants, workflows, teams, graphs, routers), and the entry points
//! ([`Config::build`](crate::Config::build),
//! [`Config::build_hosted`](crate::Config::build_hosted)) are in `built`.

mod a2a;
mod agents;
mod built;
mod ctx;
mod graph;
mod magentic;
mod mcp_connect;
mod merge;
mod model_limits;
mod models;
mod node_cache;
mod options;
mod participants;
mod plan;
mod reasoner;
mod retry;
mod router;
mod schedules;
mod stop;
mod store;
mod teams;
mod tools;
mod workflow;

pub use built::{Built, Hosted};
pub use options::BuildOptions;
pub use schedules::Schedule;
pub use store::Store;
