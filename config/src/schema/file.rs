//! [`ConfigFile`]: the whole document, and its JSON Schema.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::agents::AgentSpec;
use super::checkpoint::CheckpointSpec;
use super::models::ModelSpec;
use super::schedules::ScheduleSpec;
use super::serve::ServeSpec;
use super::workflow::WorkflowSpec;

/// The config format's version; the only one so far.
pub const CONFIG_VERSION: u32 = 1;

/// A troupe config: models, agents and the workflow that runs them.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "troupe config")]
pub struct ConfigFile {
    /// The config format's version: `1`.
    pub version: u32,
    /// The team's name (the workflow's name in events, unless the workflow
    /// names itself).
    #[serde(default)]
    pub name: Option<String>,
    /// What the team does.
    #[serde(default)]
    pub description: Option<String>,
    /// Named model configurations, referred to by agents.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// Named agents.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentSpec>,
    /// Named workflows usable wherever an agent is (nested workflows):
    /// inline, or the workflow of another config file (`file:`).
    #[serde(default)]
    pub workflows: BTreeMap<String, WorkflowSpec>,
    /// The workflow to run. Without one, a config with a single agent runs
    /// that agent alone.
    #[serde(default)]
    pub workflow: Option<WorkflowSpec>,
    /// Where checkpoints and chat sessions are kept.
    #[serde(default)]
    pub checkpoint: Option<CheckpointSpec>,
    /// How `troupe serve` holds connections and double texting (its flags
    /// win).
    #[serde(default)]
    pub serve: Option<ServeSpec>,
    /// Runs `troupe serve` starts on a cron schedule (each tick once
    /// across the servers sharing a PostgreSQL store).
    #[serde(default)]
    pub schedules: Vec<ScheduleSpec>,
}

impl ConfigFile {
    /// The workflows that run in this file: the main one and the inline
    /// named ones (those from other files have their own config).
    pub fn local_workflows(&self) -> impl Iterator<Item = &WorkflowSpec> {
        self.workflow
            .iter()
            .chain(self.workflows.values().filter(|w| w.file.is_none()))
    }
}

/// The JSON Schema of a config file, as `troupe schema` prints it.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(ConfigFile).to_value()
}
