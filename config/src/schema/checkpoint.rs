//! `checkpoint:`: where checkpoints and chat sessions are kept.

use schemars::JsonSchema;
use serde::Deserialize;

/// Where checkpoints and chat sessions are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// In the process (lost when it ends).
    Memory,
    /// One file per checkpoint and conversation under a directory.
    Dir,
    /// One SQLite database file.
    Sqlite,
}

/// The checkpoint store.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// `memory`, `dir` or `sqlite`.
    pub store: StoreKind,
    /// The directory (`dir`) or database file (`sqlite`), relative to the
    /// config file.
    #[serde(default)]
    pub path: Option<String>,
    /// Also checkpoint every this many delivered messages (router runs).
    #[serde(default)]
    pub every: Option<u64>,
}
