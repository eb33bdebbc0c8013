//! Declarative teams: a YAML file names models, agents and a workflow;
//! [`Config`] loads and checks it, and builds the workflow.
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
//! `sequential`, `map_reduce`), a `graph` (nodes, conditional transitions,
//! loops), cagent-style `steps` (sequential, `parallel` blocks that nest,
//! `condition` steps whose branches may go back to an earlier step), or a
//! `router` alone (a graph may have one too). `workflows:` names nested
//! workflows, inline or from another file, usable wherever an agent is.
//! The JSON Schema of the format is [`json_schema`] (`troupe schema`).
//!
//! A config can also spread its agents over a cluster: `node: b` on an
//! agent, `researcher@b` where a participant is named, or `placement:
//! spread` on a `map_reduce` send those turns to other nodes. `troupe node
//! --config FILE --name b` hosts the agents placed on `b`
//! ([`Config::hosted_by`], [`Config::build_hosted`]); `troupe run FILE
//! --connect ADDR` joins the nodes and runs the workflow, remote
//! participants and all ([`Config::remote_agents`]). The placement rules
//! are in the `remote` module's documentation.
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

mod build;
mod de;
mod duration;
mod env;
mod error;
mod mermaid;
mod plan;
mod remote;
mod schema;
pub mod template;
mod tools;
mod tree;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use build::{BuildOptions, Built, Hosted, Store};
pub use duration::HumanDuration;
pub use error::{ConfigError, Diagnostic, Position};
pub use remote::RemoteRef;
pub use schema::*;
pub use tools::{BUILTIN_TOOLS, builtin_tool};
pub use validate::valid_name;

/// Configs nest (`workflows: {x: {file: …}}`) at most this deep.
const MAX_NESTING: usize = 16;

/// A loaded, checked config.
#[derive(Debug, Clone)]
pub struct Config {
    path: PathBuf,
    spec: ConfigFile,
    /// The configs of `workflows` entries with `file:`, by name.
    nested: BTreeMap<String, Config>,
}

impl Config {
    /// Loads and checks a config file (and the files it nests).
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Loads and checks config text; `path` names it in errors and is where
    /// nested files and store paths are found relative to.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let mut diagnostics = Vec::new();
        let mut stack = Vec::new();
        let config = load_text(text, path.as_ref(), &mut stack, &mut diagnostics);
        match config {
            Some(c) if diagnostics.is_empty() => Ok(c),
            _ => {
                sort(&mut diagnostics, path.as_ref());
                Err(ConfigError::Invalid(diagnostics))
            }
        }
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it says.
    pub fn spec(&self) -> &ConfigFile {
        &self.spec
    }

    /// The config of a `workflows` entry that has `file:`.
    pub fn nested(&self, name: &str) -> Option<&Config> {
        self.nested.get(name)
    }

    /// The workflow's name: the workflow's own, else the config's, else
    /// `workflow`.
    pub fn workflow_name(&self) -> String {
        self.spec
            .workflow
            .as_ref()
            .and_then(|w| w.name.clone())
            .or_else(|| self.spec.name.clone())
            .unwrap_or_else(|| "workflow".into())
    }

    /// The workflow as a Mermaid flowchart (`troupe graph`).
    pub fn mermaid(&self) -> String {
        mermaid::render(self)
    }

    /// Builds the workflow: model clients, tools (starting MCP servers),
    /// agents, nested workflows, the checkpoint store.
    pub async fn build(&self, options: &BuildOptions) -> Result<Built, ConfigError> {
        build::build(self, options).await
    }

    /// Builds the agents (or named workflows) `names` for cluster node
    /// `node` to host (`troupe node`; see [`Config::hosted_by`]). They are
    /// built as [`Config::build`] builds them, locally even when their
    /// `node:` names `node`; what they use from other nodes stays remote.
    pub async fn build_hosted(
        &self,
        names: &[String],
        node: &str,
        options: &BuildOptions,
    ) -> Result<Hosted, ConfigError> {
        build::build_hosted(self, names, node, options).await
    }

    /// Where a path written in the config points (relative to the file).
    pub fn resolve_path(&self, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path
                .parent()
                .map_or_else(|| p.to_path_buf(), |dir| dir.join(p))
        }
    }
}

fn sort(diagnostics: &mut [Diagnostic], main: &Path) {
    diagnostics.sort_by(|a, b| {
        (a.file != main, &a.file, a.position).cmp(&(b.file != main, &b.file, b.position))
    });
}

fn load_text(
    text: &str,
    path: &Path,
    stack: &mut Vec<PathBuf>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Config> {
    let tree = match tree::parse(text) {
        Ok(t) => t,
        Err(e) => {
            diagnostics.push(Diagnostic::new(path, e.at, "", e.message));
            return None;
        }
    };
    let (spec, errors, removed) = de::deserialize_all::<ConfigFile>(&tree);
    let before = diagnostics.len();
    for e in errors {
        let field = e.field();
        // Unknown fields and missing ones point at the key; wrong values
        // at the value.
        let at = match (&e.missing, &e.path) {
            // A missing field is reported where its mapping's key is.
            (Some(_), Some(p)) => tree.position_of(p),
            _ => e.at.unwrap_or(tree.at),
        };
        let mut d = Diagnostic::new(path, at, field.to_string(), e.message);
        d.expected = e.expected;
        diagnostics.push(d);
    }
    let spec = spec?;
    diagnostics.extend(validate::check(&spec, &tree, path, &removed));

    stack.push(path.to_path_buf());
    let mut nested = BTreeMap::new();
    for (name, w) in &spec.workflows {
        let Some(file) = &w.file else { continue };
        let field = tree::FieldPath::root()
            .key("workflows")
            .key(name.clone())
            .key("file");
        let at = tree.value_position(&field);
        let target = match path.parent() {
            Some(dir) if !Path::new(file).is_absolute() => dir.join(file),
            _ => PathBuf::from(file),
        };
        if stack.len() >= MAX_NESTING || stack.iter().any(|p| same_file(p, &target)) {
            diagnostics.push(
                Diagnostic::new(
                    path,
                    at,
                    field.to_string(),
                    format!("`{file}` nests itself"),
                )
                .expected("a file that does not include this one"),
            );
            continue;
        }
        let text = match std::fs::read_to_string(&target) {
            Ok(t) => t,
            Err(e) => {
                diagnostics.push(
                    Diagnostic::new(
                        path,
                        at,
                        field.to_string(),
                        format!("cannot read `{}`: {e}", target.display()),
                    )
                    .expected("a config file path relative to this file"),
                );
                continue;
            }
        };
        if let Some(inner) = load_text(&text, &target, stack, diagnostics) {
            if inner.spec.workflow.is_none() && inner.spec.agents.len() != 1 {
                diagnostics.push(Diagnostic::new(
                    path,
                    at,
                    field.to_string(),
                    format!("`{file}` has no workflow to nest"),
                ));
            }
            nested.insert(name.clone(), inner);
        }
    }
    stack.pop();
    if diagnostics.len() > before {
        return None;
    }
    Some(Config {
        path: path.to_path_buf(),
        spec,
        nested,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
