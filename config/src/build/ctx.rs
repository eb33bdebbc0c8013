//! [`Ctx`]: what building one config file needs — the config, the
//! options, the parallel blocks templates know, and what is built once
//! and kept.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use troupe_agents::McpClient;
use troupe_runtime::Agent;

use super::options::BuildOptions;
use crate::env::expand;
use crate::error::{ConfigError, Diagnostic};
use crate::load::Config;
use crate::plan::Blocks;
use crate::schema::parallel_blocks;
use crate::tree::FieldPath;

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
    /// The parallel blocks of the config's steps, for templates.
    pub(super) blocks: Blocks,
    pub(super) agents: BTreeMap<String, Arc<dyn Agent>>,
    pub(super) workflows: BTreeMap<String, Arc<dyn Agent>>,
    /// Named workflows being built (to refuse one that contains itself).
    pub(super) building: Vec<String>,
    /// Agents being built (to refuse one that is its own tool).
    pub(super) building_agents: Vec<String>,
    pub(super) mcp: Vec<McpClient>,
    pub(super) notes: Vec<String>,
    /// Warnings found while building (router cycles), in check mode.
    pub(super) warnings: Vec<Diagnostic>,
    /// The models and agents (local or remote) the build asked for.
    pub(super) used: std::collections::BTreeSet<String>,
    /// The models resting in each model's fallback chain, shared by every
    /// agent using that model.
    pub(super) cooldowns: BTreeMap<String, Arc<troupe_agents::model::Cooldowns>>,
    /// Where nodes with `cache:` keep their results: the run's store, or
    /// (without one) this process's memory.
    pub(super) cache: Option<Arc<dyn troupe_runtime::store::ResultCache>>,
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
            blocks: Arc::new(blocks),
            agents: BTreeMap::new(),
            workflows: BTreeMap::new(),
            building: Vec::new(),
            building_agents: Vec::new(),
            mcp: Vec::new(),
            notes: Vec::new(),
            warnings: Vec::new(),
            used: std::collections::BTreeSet::new(),
            cooldowns: BTreeMap::new(),
            cache: None,
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

    /// `text` (written at `field`) with `${VAR}` expanded; errors name
    /// `what` and are placed at `field`.
    pub(super) fn expand(
        &self,
        what: &str,
        field: &FieldPath,
        text: &str,
    ) -> Result<String, ConfigError> {
        expand(text, &|k| self.env(k)).map_err(|e| self.invalid(field, format!("{what}: {e}")))
    }

    /// Like [`expand`](Self::expand), for a string that may carry a
    /// secret (a header, a URL, an MCP server's `env`): every value read
    /// from the environment is registered with the secrets registry, so
    /// that everything troupe prints masks it — except a whole URL (its
    /// password and query values are registered by the client that uses
    /// it; masking it whole would hide the endpoint from every error).
    pub(super) fn expand_secret(
        &self,
        what: &str,
        field: &FieldPath,
        text: &str,
    ) -> Result<String, ConfigError> {
        let read = std::cell::RefCell::new(Vec::new());
        let expanded = expand(text, &|k| {
            let value = self.env(k);
            if let Some(v) = &value {
                read.borrow_mut().push(v.clone());
            }
            value
        })
        .map_err(|e| self.invalid(field, format!("{what}: {e}")))?;
        for value in read.into_inner() {
            if value.contains("://") {
                troupe_runtime::secrets::register_url(&value);
            } else {
                troupe_runtime::secrets::register(&value);
            }
        }
        Ok(expanded)
    }

    /// Checks only that `text`'s `${…}` references are well formed (a
    /// string the run will not expand, such as an offline model's).
    pub(super) fn check_references(
        &self,
        what: &str,
        field: &FieldPath,
        text: &str,
    ) -> Result<(), ConfigError> {
        expand(text, &|_| Some("set".to_string()))
            .map(|_| ())
            .map_err(|e| self.invalid(field, format!("{what}: {e}")))
    }

    /// Warnings for the models and agents of the config the build did not
    /// use.
    pub(super) fn unused(&self) -> Vec<Diagnostic> {
        let spec = self.config.spec();
        let models = spec.models.keys().map(|m| ("models", "model", m));
        let agents = spec.agents.keys().map(|a| ("agents", "agent", a));
        models
            .chain(agents)
            .filter(|(section, _, name)| {
                let key = format!("{section}.{name}");
                !self.used.contains(&key)
            })
            .map(|(section, kind, name)| {
                self.config.locate(
                    &FieldPath::root().key(section).key(name.clone()),
                    format!("{kind} `{name}` is not used by the workflow"),
                )
            })
            .collect()
    }

    /// The config is invalid at `field`.
    pub(super) fn invalid(&self, field: &FieldPath, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid(vec![self.config.locate(field, message)])
    }
}
