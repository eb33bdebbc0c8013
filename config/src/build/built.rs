//! What building gives — [`Built`] (a workflow) and [`Hosted`] (the agents
//! a cluster node hosts) — and the entry points that build them.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use troupe_agents::McpClient;
use troupe_runtime::{Agent, Workflow};

use super::ctx::{Ctx, build_error};
use super::options::BuildOptions;
use super::store::Store;
use crate::error::{ConfigError, Diagnostic};
use crate::load::{Config, file_kind};
use crate::schema::StoreKind;
use crate::tree::FieldPath;

/// A built config: the workflow and what it needs kept alive.
///
/// It holds no run's state: what `{{ $steps… }}` templates read lives in
/// each run's thread (its run state), so one built config serves any
/// number of concurrent runs, and a thread or checkpoint carries on in a
/// config built afresh.
#[derive(Debug)]
pub struct Built {
    /// The workflow (an agent: run it, stream it, nest it).
    pub workflow: Workflow,
    /// The checkpoint store, if the config has one (already attached to
    /// the workflow).
    pub store: Option<Store>,
    /// How each model was resolved (`main: openai gpt-4o-mini at …`,
    /// `main: scripted (offline)`).
    pub notes: Vec<String>,
    /// MCP connections (closed when dropped, or by [`Built::close`]).
    pub mcp: Vec<McpClient>,
    /// What the build found that does not stop the run (router cycles,
    /// models and agents nothing uses), as `troupe validate` prints them;
    /// collected by every build, to run or to check.
    pub warnings: Vec<Diagnostic>,
}

impl Built {
    /// Closes the MCP connections (their child processes exit).
    pub async fn close(&self) {
        for c in &self.mcp {
            c.close().await;
        }
    }
}

/// The agents a cluster node hosts, built from a config
/// ([`Config::build_hosted`]), and what they need kept alive.
pub struct Hosted {
    /// The agents (and named workflows), in the order asked for.
    pub agents: Vec<Arc<dyn Agent>>,
    /// How each model was resolved (as [`Built::notes`]).
    pub notes: Vec<String>,
    /// MCP connections (closed when dropped, or by [`Hosted::close`]).
    pub mcp: Vec<McpClient>,
}

impl fmt::Debug for Hosted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosted")
            .field(
                "agents",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("notes", &self.notes)
            .field("mcp", &self.mcp)
            .finish()
    }
}

impl Hosted {
    /// Closes the MCP connections (their child processes exit).
    pub async fn close(&self) {
        for c in &self.mcp {
            c.close().await;
        }
    }
}

impl Config {
    /// Builds the workflow: model clients, tools (starting MCP servers),
    /// agents, nested workflows, the checkpoint store.
    pub async fn build(&self, options: &BuildOptions) -> Result<Built, ConfigError> {
        let store = match &self.spec().checkpoint {
            // Checking opens nothing: a memory store stands in.
            Some(cp) if options.check => {
                if let Some(p) = self.checkpoint_path()? {
                    self.check_store_path(cp.store, &p)?;
                }
                // An unset variable in the url is found without connecting.
                self.checkpoint_url()?;
                Some(Store::open(StoreKind::Memory, None)?)
            }
            Some(cp) => {
                let path = self.checkpoint_path()?;
                // What checking finds is said the same way here; what only
                // opening finds (no permission) is placed there too.
                if let Some(p) = &path {
                    self.check_store_path(cp.store, p)?;
                }
                let durability = cp.durability.map_or(Default::default(), |d| d.to_runtime());
                let save_errors = cp.on_error.map_or(Default::default(), |e| e.to_runtime());
                let opened = if cp.store == StoreKind::Postgres {
                    let url = self.checkpoint_url()?.unwrap_or_default();
                    Store::open_postgres(&url, durability, save_errors).await
                } else {
                    Store::open_with(cp.store, path, durability, save_errors)
                };
                Some(opened.map_err(|e| match (e, cp.path.is_some()) {
                    (ConfigError::Build(why), true) => self.store_error(why),
                    (e, _) => e,
                })?)
            }
            None => None,
        };
        let mut ctx = Ctx::new(self, options, None);
        ctx.cache = store.as_ref().map(|s| s.cache.clone());
        let name = self.workflow_name();
        let workflow =
            match &self.spec().workflow {
                Some(w) => ctx.workflow(&name, w, store.as_ref()).await?,
                None => {
                    // A single agent, run alone.
                    let (agent_name, _) =
                        self.spec().agents.iter().next().ok_or_else(|| {
                            build_error("the config has no workflow and no agent")
                        })?;
                    let agent = ctx.participant_ref(agent_name).await?;
                    let mut b = Workflow::builder().name(name).participant_arc(agent);
                    if let Some(s) = &store {
                        b = b.checkpoint_store(s.checkpoints.clone());
                    }
                    b.build().map_err(build_error)?
                }
            };
        // Warnings are found building to run too: `troupe run` and
        // `troupe serve` say them before the first turn.
        let unused = ctx.unused();
        let mut warnings = self.check_warnings().to_vec();
        warnings.append(&mut ctx.warnings);
        ctx.warnings = warnings;
        ctx.warnings.extend(unused);
        Ok(Built {
            workflow,
            store,
            notes: ctx.notes,
            mcp: ctx.mcp,
            warnings: ctx.warnings,
        })
    }

    /// Checks the config as [`Config::build`] would build it, without
    /// starting or connecting to anything ([`BuildOptions::check`]):
    /// every problem the build finds is a located error; the router's
    /// warnings and the models and agents nothing uses are returned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use troupe_config::{BuildOptions, Config};
    ///
    /// let yaml = "version: 1\nmodels:\n  m: {provider: scripted, replies: [hi]}\n  spare: {provider: scripted}\nagents:\n  a: {model: m}\n";
    /// let config = Config::parse(yaml, "team.yaml")?;
    /// let warnings = config.check(&BuildOptions::default()).await?;
    /// assert_eq!(warnings[0].to_string(), "team.yaml:4:3: field `models.spare`: model `spare` is not used by the workflow");
    /// # Ok(()) }
    /// ```
    pub async fn check(&self, options: &BuildOptions) -> Result<Vec<Diagnostic>, ConfigError> {
        let options = BuildOptions {
            check: true,
            ..options.clone()
        };
        Ok(self.build(&options).await?.warnings)
    }

    /// Whether a store at `path` could be opened, without creating
    /// anything: no file stands where a directory must be.
    fn check_store_path(&self, kind: StoreKind, path: &Path) -> Result<(), ConfigError> {
        let problem = match kind {
            StoreKind::Memory | StoreKind::Postgres => None,
            StoreKind::Dir if path.exists() && !path.is_dir() => {
                Some(format!("`{}` is not a directory", path.display()))
            }
            StoreKind::Sqlite if path.is_dir() => Some(format!(
                "`{}` is a directory, not a database file",
                path.display()
            )),
            // A device or FIFO: SQLite would fail on it, or block.
            StoreKind::Sqlite if path.exists() && !path.is_file() => Some(format!(
                "`{}` is not a regular file ({}), not a database file",
                path.display(),
                std::fs::metadata(path).map_or("unknown", |m| file_kind(&m.file_type()))
            )),
            StoreKind::Dir | StoreKind::Sqlite => path
                .ancestors()
                .skip(1)
                .find(|a| !a.as_os_str().is_empty() && a.exists())
                .filter(|a| !a.is_dir())
                .map(|a| format!("`{}` is a file, not a directory", a.display())),
        };
        match problem {
            None => Ok(()),
            Some(p) => Err(self.store_error(p)),
        }
    }

    /// The store at `checkpoint.path` cannot be opened, for `why`.
    fn store_error(&self, why: impl fmt::Display) -> ConfigError {
        let field = FieldPath::root().key("checkpoint").key("path");
        let why = why.to_string();
        let why = why.strip_prefix("checkpoint store: ").unwrap_or(&why);
        ConfigError::Invalid(vec![
            self.locate(
                &field,
                format!("the checkpoint store cannot be opened: {why}"),
            )
            .expected("a path whose directories can be created"),
        ])
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
        let mut ctx = Ctx::new(self, options, Some(node.to_string()));
        let mut agents = Vec::with_capacity(names.len());
        for name in names {
            agents.push(ctx.participant(name).await?);
        }
        Ok(Hosted {
            agents,
            notes: ctx.notes,
            mcp: ctx.mcp,
        })
    }
}

/// Builds the workflow of a nested config file, named `name`, for node
/// `here` (if a node is being built).
pub(super) async fn build_nested(
    config: Config,
    options: BuildOptions,
    name: String,
    here: Option<String>,
) -> Result<Built, ConfigError> {
    let mut ctx = Ctx::new(&config, &options, here);
    let workflow = match &config.spec().workflow {
        Some(w) => ctx.workflow(&name, w, None).await?,
        None => {
            let agent_name = config.spec().agents.keys().next().cloned().ok_or_else(|| {
                build_error(format!("`{}` has no workflow", config.path().display()))
            })?;
            let agent = ctx.participant_ref(&agent_name).await?;
            Workflow::builder()
                .name(name.clone())
                .participant_arc(agent)
                .build()
                .map_err(build_error)?
        }
    };
    let mut warnings = config.check_warnings().to_vec();
    warnings.append(&mut ctx.warnings);
    Ok(Built {
        workflow,
        store: None,
        notes: ctx.notes,
        mcp: ctx.mcp,
        warnings,
    })
}
