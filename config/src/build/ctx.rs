//! [`Ctx`]: what building one config file needs — the config, the
//! options, the board templates read, and what is built once and kept.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use troupe_agents::McpClient;
use troupe_runtime::Agent;

use super::options::BuildOptions;
use crate::env::expand;
use crate::error::ConfigError;
use crate::load::Config;
use crate::schema::parallel_blocks;
use crate::template::Board;

/// A build failure with this text.
pub(super) fn build_error(what: impl fmt::Display) -> ConfigError {
    ConfigError::Build(what.to_string())
}

/// A boxed future: building nests (a workflow's participant may be a
/// workflow), so the recursive steps are boxed.
pub(super) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What building one config file needs.
pub(super) struct Ctx<'a> {
    pub(super) config: &'a Config,
    pub(super) options: &'a BuildOptions,
    /// The cluster node being built for (`troupe node`): agents placed on
    /// it are built here, not called remotely. `None` for a workflow run.
    pub(super) here: Option<String>,
    pub(super) board: Board,
    pub(super) agents: BTreeMap<String, Arc<dyn Agent>>,
    pub(super) workflows: BTreeMap<String, Arc<dyn Agent>>,
    /// Named workflows being built (to refuse one that contains itself).
    pub(super) building: Vec<String>,
    pub(super) mcp: Vec<McpClient>,
    pub(super) notes: Vec<String>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(config: &'a Config, options: &'a BuildOptions, here: Option<String>) -> Self {
        let mut blocks = BTreeMap::new();
        for w in config
            .spec()
            .workflow
            .iter()
            .chain(config.spec().workflows.values())
        {
            if let Some(steps) = &w.steps {
                parallel_blocks(steps, &mut blocks);
            }
        }
        Ctx {
            config,
            options,
            here,
            board: Board::with_blocks(blocks),
            agents: BTreeMap::new(),
            workflows: BTreeMap::new(),
            building: Vec::new(),
            mcp: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// An environment variable; `TROUPE_EXE` defaults to the running
    /// executable.
    pub(super) fn env(&self, name: &str) -> Option<String> {
        if name == "TROUPE_EXE" {
            return std::env::var("TROUPE_EXE").ok().or_else(|| {
                self.options
                    .troupe_exe
                    .clone()
                    .or_else(|| std::env::current_exe().ok())
                    .map(|p| p.to_string_lossy().into_owned())
            });
        }
        std::env::var(name).ok()
    }

    /// `text` with `${VAR}` expanded; errors name `what`.
    pub(super) fn expand(&self, what: &str, text: &str) -> Result<String, ConfigError> {
        expand(text, &|k| self.env(k)).map_err(|e| build_error(format!("{what}: {e}")))
    }
}
