//! Cassettes: every model call, tool call, MCP exchange and remote (A2A)
//! agent turn of a team recorded as JSON lines, keyed by the path of the
//! agent that made it (`team/nested_team/agent`) and its index among that
//! path's calls, and played back offline and deterministically.
//!
//! [`Cassette::record`] and [`Cassette::replay`] open one over a directory;
//! [`Cassette::wrap`] puts a model behind it for one agent,
//! [`Cassette::wrap_tool`] a tool, [`Cassette::wrap_agent`] a remote agent;
//! an MCP server's tool list is kept with [`Cassette::record_mcp_server`]
//! and given back, without starting or connecting to the server, by
//! [`Cassette::mcp_server`]. Recording, each call is made and written
//! (request, response — a streamed one as its pieces — usage, latency),
//! secrets taken out first. Replaying, nothing is called: the recorded
//! answer comes back (a streamed one piece by piece), and a request not in
//! the cassette fails naming the agent path and the call, with a diff of
//! the request (how a call is matched: [`ReplayMode`]).
//!
//! One cassette can also record each run into a directory of its own
//! (`DIR/<run id>/`, [`Cassette::record_each_run`]: `troupe serve
//! --record`), or replay one recording for every run
//! ([`Cassette::replay_each_run`]).
//!
//! For tests, [`Cassette::load`] opens a recording,
//! [`Cassette::replay_model`] gives a model answered only from it, and
//! [`Cassette::tool_call`] / [`Cassette::unused`] say what was called:
//!
//! ```
//! use std::sync::Arc;
//! use troupe_agents::model::{Cassette, ScriptedModel, ScriptedReply};
//! use troupe_agents::ChatAgent;
//! use troupe_runtime::{RunContext, Workflow};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("cassette-doc-{}", std::process::id()));
//! // A team of one writer, its model given.
//! let team = |model| -> Result<Workflow, Box<dyn std::error::Error>> {
//!     let writer = ChatAgent::builder("writer").model_arc(model).build()?;
//!     Ok(Workflow::builder().name("team").participant(writer).build()?)
//! };
//!
//! // Record: the scripted model stands for a real one.
//! let tape = Cassette::record(&dir)?;
//! let model = Arc::new(ScriptedModel::new([ScriptedReply::text("Hello!")]));
//! team(tape.wrap("writer", model))?.run_task("greet", &RunContext::new()).await?;
//!
//! // Replay: no model at all, the answer comes from the cassette.
//! let tape = Cassette::load(&dir)?;
//! let result = team(tape.replay_model("writer"))?
//!     .run_task("greet", &RunContext::new())
//!     .await?;
//! assert_eq!(result.final_text(), "Hello!");
//! assert_eq!(tape.model_calls()[0].agent, "team/writer");
//! assert!(tape.unused().is_empty());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```

mod agent;
mod diff;
mod file;
mod matching;
mod mcp;
mod model;
mod tape;
mod testing;
mod tool;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

pub use agent::AgentEntry;
pub use file::{A2A_FILE, CALLS_FILE, CassetteError, Entry, MCP_FILE, TOOLS_FILE, ToolEntry};
pub use matching::ReplayMode;
pub use mcp::{McpServerEntry, McpToolEntry, ReplayedTool};
use tape::Tape;

/// What a replaying cassette holds.
#[derive(Debug, Default)]
struct Recorded {
    models: Vec<Entry>,
    tools: Vec<ToolEntry>,
    agents: Vec<AgentEntry>,
    servers: Vec<McpServerEntry>,
}

/// One cassette, shared by every agent's model, tool and remote agent
/// (see the module's doc).
pub struct Cassette {
    dir: PathBuf,
    /// Replaying (how, and what); `None` when recording.
    replay: Option<(ReplayMode, Arc<Recorded>)>,
    /// Whether each run has a tape of its own (`DIR/<run id>/` when
    /// recording; its own count of what was used when replaying).
    per_run: bool,
    /// The tapes, by run id ("" for the one tape of a cassette that is
    /// not per run).
    tapes: Mutex<HashMap<String, Arc<Tape>>>,
    /// Recording: the MCP servers' tool lists taken when the team was
    /// built (written into each run's tape).
    servers: Mutex<Vec<McpServerEntry>>,
    /// Text taken out of what is recorded (secrets from the environment,
    /// an MCP server's environment, headers).
    secrets: RwLock<Vec<String>>,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = if self.replays() { "replay" } else { "record" };
        f.debug_struct("Cassette")
            .field("dir", &self.dir)
            .field("mode", &mode)
            .field("per_run", &self.per_run)
            .finish()
    }
}

impl Cassette {
    /// A cassette recording into directory `dir` (made if need be; a
    /// cassette there already is replaced).
    pub fn record(dir: &Path) -> Result<Arc<Self>, CassetteError> {
        let cassette = Arc::new(Self::new(dir, None, false));
        cassette.tape(None)?;
        Ok(cassette)
    }

    /// A cassette recording each run into `dir/<run id>/` (each one a
    /// cassette of its own, replayable alone).
    pub fn record_each_run(dir: &Path) -> Result<Arc<Self>, CassetteError> {
        std::fs::create_dir_all(dir).map_err(|source| CassetteError::Io {
            action: "create",
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Arc::new(Self::new(dir, None, true)))
    }

    /// The cassette recorded in directory `dir`, to replay strictly.
    pub fn replay(dir: &Path) -> Result<Arc<Self>, CassetteError> {
        Self::replay_with(dir, ReplayMode::Strict)
    }

    /// The cassette recorded in directory `dir`, to replay in `mode`.
    pub fn replay_with(dir: &Path, mode: ReplayMode) -> Result<Arc<Self>, CassetteError> {
        let recorded = Self::read(dir)?;
        Ok(Arc::new(Self::new(dir, Some((mode, recorded)), false)))
    }

    /// The cassette recorded in directory `dir`, replayed in `mode` for
    /// every run anew (each run uses the recorded calls from the first).
    pub fn replay_each_run(dir: &Path, mode: ReplayMode) -> Result<Arc<Self>, CassetteError> {
        let recorded = Self::read(dir)?;
        Ok(Arc::new(Self::new(dir, Some((mode, recorded)), true)))
    }

    fn new(dir: &Path, replay: Option<(ReplayMode, Arc<Recorded>)>, per_run: bool) -> Self {
        Cassette {
            dir: dir.to_path_buf(),
            replay,
            per_run,
            tapes: Mutex::default(),
            servers: Mutex::default(),
            secrets: RwLock::new(file::secrets_from_env()),
        }
    }

    fn read(dir: &Path) -> Result<Arc<Recorded>, CassetteError> {
        Ok(Arc::new(Recorded {
            models: file::read(dir, CALLS_FILE, false)?,
            // A cassette of a team without tools (MCP servers, remote
            // agents) may have no such file.
            tools: file::read(dir, TOOLS_FILE, true)?,
            agents: file::read(dir, A2A_FILE, true)?,
            servers: file::read(dir, MCP_FILE, true)?,
        }))
    }

    /// Whether it replays (rather than records).
    pub fn replays(&self) -> bool {
        self.replay.is_some()
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes `secret` out of everything recorded from now on (an MCP
    /// server's environment, a header); values under 4 bytes are left.
    pub fn add_secret(&self, secret: &str) {
        if secret.len() < 4 {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(|p| p.into_inner());
        if !secrets.iter().any(|s| s == secret) {
            secrets.push(secret.to_string());
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `value` with every secret replaced.
    fn redact(&self, value: serde_json::Value) -> serde_json::Value {
        let secrets = self.secrets.read().unwrap_or_else(|p| p.into_inner());
        file::redact(value, &secrets)
    }

    /// `text` with every secret replaced.
    fn redact_text(&self, text: &str) -> String {
        match self.redact(serde_json::Value::String(text.to_string())) {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }
    }

    /// The tape of run `run_id` (the one tape unless per run), made on
    /// first use.
    fn tape(&self, run_id: Option<&str>) -> Result<Arc<Tape>, CassetteError> {
        let key = if self.per_run {
            run_id.unwrap_or("run")
        } else {
            ""
        };
        let mut tapes = self.tapes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tapes.get(key) {
            return Ok(t.clone());
        }
        let tape = if self.replays() {
            Tape::replaying()
        } else {
            let dir = if self.per_run {
                self.dir.join(safe_dir_name(key))
            } else {
                self.dir.clone()
            };
            let tape = Tape::recording(&dir)?;
            let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
            for s in servers.iter() {
                tape.append(tape::Kind::Servers, s, &self.secrets())?;
            }
            tape
        };
        let tape = Arc::new(tape);
        tapes.insert(key.to_string(), tape.clone());
        Ok(tape)
    }

    fn secrets(&self) -> Vec<String> {
        self.secrets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A run id as a directory name: characters other than letters, digits,
/// `-`, `_` and `.` replaced by `_` (and never `.` or `..`).
fn safe_dir_name(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        "run".into()
    } else {
        s
    }
}
