//! # troupe-config
//!
//! Declarative teams for troupe: a YAML file names models, agents and a
//! workflow; [`Config`] loads and checks it, and builds the workflow.
//!
//! ```yaml
//! version: 1
//! models:
//!   main:
//!     provider: auto            # a real endpoint when OPENAI_BASE_URL / OPENAI_API_KEY are set
//!     model: ${OPENAI_MODEL:-gpt-4o-mini}
//! agents:
//!   writer:
//!     model: main
//!     instructions: Write a short draft.
//!     script: ["A first draft."]   # what it says offline
//! workflow:
//!   steps:
//!     - agent: writer
//! ```
//!
//! The workflow is one of: a preset (`round_robin`, `selector`, `swarm`,
//! `sequential`, `map_reduce`, `magentic`), a `graph` (nodes, conditional transitions,
//! loops), cagent-style `steps` (sequential, `parallel` blocks that nest,
//! `condition` steps whose branches may go back to an earlier step), or a
//! `router` alone (a graph may have one too). `workflows:` names nested
//! workflows, inline or from another file, usable wherever an agent is.
//! The JSON Schema of the format is [`json_schema`] (`troupe schema`),
//! generated from the types of [`ConfigFile`]; where a config names a
//! runtime setting (a node's `join`, a route's `overflow`, retry error
//! kinds), those types are the runtime's own.
//!
//! A config can also spread its agents over a cluster: `node: b` on an
//! agent, `researcher@b` where a participant is named, or `placement:
//! spread` on a `map_reduce` send those turns to other nodes. `troupe node
//! --config FILE --name b` hosts the agents placed on `b`
//! ([`Config::hosted_by`], [`Config::build_hosted`]); `troupe run FILE
//! --connect ADDR` joins the nodes and runs the workflow, remote
//! participants and all ([`Config::remote_agents`]). The placement rules
//! are in [`RemoteRef`]'s documentation.
//!
//! Loading reports every problem at once, each naming the file, line,
//! column and field, and what was expected:
//!
//! ```
//! use troupe_config::Config;
//!
//! let yaml = "version: 1\nagents:\n  writer:\n    model: fast\n    colour: blue\n";
//! let err = Config::parse(yaml, "team.yaml").unwrap_err();
//! let text = err.to_string();
//! assert!(text.contains("team.yaml:4:12: field `agents.writer.model`: unknown model `fast`"), "{text}");
//! assert!(text.contains("team.yaml:5:5: field `agents.writer.colour`: unknown field `colour`"), "{text}");
//! ```
//!
//! [`Config::check`] goes one step further, as `troupe validate` does: it
//! builds the workflow without starting or connecting to anything, so
//! what only building finds (a router that leaves an agent unreachable,
//! a malformed or unset `${VAR}`, workflows that contain each other) is
//! a located error too, and router cycles and unused models and agents
//! come back as warnings.
//!
//! Building gives a [`Workflow`](troupe_runtime::Workflow) (an agent, so it
//! can also be nested in code):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe_config::{BuildOptions, Config};
//! use troupe_runtime::RunContext;
//!
//! let yaml = r#"
//! version: 1
//! models:
//!   offline: {provider: scripted}
//! agents:
//!   greeter: {model: offline, script: ["Hello!"]}
//! workflow:
//!   sequential: {participants: [greeter]}
//! "#;
//! let config = Config::parse(yaml, "hello.yaml")?;
//! let built = config.build(&BuildOptions::default()).await?;
//! let result = built.workflow.run_task("hi", &RunContext::new()).await?;
//! assert_eq!(result.final_text(), "Hello!");
//! # Ok(()) }
//! ```
//!
//! ## How the crate is laid out
//!
//! Loading goes text → `tree` (YAML nodes that know where
//! they were written) → `de` (a serde deserializer over that tree, which
//! places every error and recovers to find them all) → `schema` types
//! (one file per topic; values that may be written short use one generic
//! [`Shorthand`]) → `validate` (one file per topic: names, references,
//! loops, options that go together) → [`Config`]. Building goes
//! [`Config`] → `build` (one file per topic: models, tools, agents,
//! participants, teams, graphs, routers), through `plan` (graph and step
//! workflows as nodes and transitions, also drawn by [`Config::mermaid`]).
//! Files import shared helpers and the topics below them, never each
//! other.

mod arithmetic;
mod build;
mod builtin;
mod builtin_emit;
mod builtin_yield;
mod de;
mod duration;
mod env;
mod error;
mod list_form;
mod load;
mod mermaid;
mod plan;
pub mod prelude;
mod refs;
mod remote;
mod schema;
mod shorthand;
pub mod template;
mod tool_memory;
mod tree;
mod validate;

pub use build::{BuildOptions, Built, Hosted, Schedule, Store};
pub use builtin::{BUILTIN_TOOLS, builtin_tool};
pub use duration::HumanDuration;

/// `text` with `${VAR}` and `${VAR:-default}` expanded from the process's
/// environment, as a build expands a model's name; `None` when a variable
/// without a default is unset or the text is malformed.
pub fn expand_env(text: &str) -> Option<String> {
    env::expand(text, &|name| std::env::var(name).ok()).ok()
}
pub use error::{ConfigError, Diagnostic, MAX_DIAGNOSTICS, Position};
pub use load::{Config, MAX_CONFIG_BYTES};
pub use refs::valid_name;
pub use remote::RemoteRef;
pub use schema::*;
pub use shorthand::{ShortForm, Shorthand};

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeSnippets;
