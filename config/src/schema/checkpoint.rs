//! `checkpoint:`: where checkpoints and chat sessions are kept.

use schemars::JsonSchema;
use serde::Deserialize;

use super::retention::RetentionSpec;

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
    /// A PostgreSQL database (`url`), shared by many processes and
    /// machines.
    Postgres,
}

/// The checkpoint store.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// `memory`, `dir`, `sqlite` or `postgres`.
    pub store: StoreKind,
    /// The directory (`dir`) or database file (`sqlite`), relative to the
    /// config file.
    #[serde(default)]
    pub path: Option<String>,
    /// The database (`postgres`): `postgres://user:password@host:5432/dbname`,
    /// usually `${DATABASE_URL}` so the password stays out of the file.
    #[serde(default)]
    pub url: Option<String>,
    /// Also checkpoint every this many delivered messages (router runs).
    #[serde(default)]
    pub every: Option<u64>,
    /// What a saved checkpoint survives: `process` (the default: the
    /// process being killed), `fsync` (power loss too: a disk flush per
    /// checkpoint; `dir` and `sqlite` stores) or `exit` (checkpoint only
    /// when the run stops).
    #[serde(default)]
    pub durability: Option<DurabilitySpec>,
    /// What a run does when a checkpoint cannot be saved (a full disk, a
    /// file that cannot be written): `fail` (the default: it stops,
    /// failed, naming the store's error and the last checkpoint saved) or
    /// `warn` (it goes on, with a warning).
    #[serde(default)]
    pub on_error: Option<SaveErrorsSpec>,
    /// What the store keeps (finished runs up to an age, the last K
    /// checkpoints per run, sessions up to an idle time): applied by
    /// `troupe serve` in the background and by `troupe runs prune`.
    #[serde(default)]
    pub retention: Option<RetentionSpec>,
}

/// What a run does when a checkpoint cannot be saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaveErrorsSpec {
    /// The run stops, failed (exit 1), naming the error and the last
    /// checkpoint saved.
    Fail,
    /// The run goes on, with a warning.
    Warn,
}

impl SaveErrorsSpec {
    /// The runtime's policy.
    pub fn to_runtime(self) -> troupe_runtime::store::SaveErrors {
        use troupe_runtime::store::SaveErrors;
        match self {
            SaveErrorsSpec::Fail => SaveErrors::Fail,
            SaveErrorsSpec::Warn => SaveErrors::Warn,
        }
    }
}

/// What a saved checkpoint survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DurabilitySpec {
    /// Handed to the OS after every superstep: survives `kill -9`.
    Process,
    /// Flushed to the disk after every superstep: survives power loss.
    Fsync,
    /// Saved only when the run stops.
    Exit,
}

impl DurabilitySpec {
    /// The runtime's durability.
    pub fn to_runtime(self) -> troupe_runtime::store::Durability {
        use troupe_runtime::store::Durability;
        match self {
            DurabilitySpec::Process => Durability::Process,
            DurabilitySpec::Fsync => Durability::Fsync,
            DurabilitySpec::Exit => Durability::Exit,
        }
    }
}
