//! `--record DIR`, `--replay DIR` and `--replay-mode` (on `troupe run`,
//! `troupe chat` and `troupe serve`): the cassette they open.

use std::path::PathBuf;
use std::sync::Arc;

use troupe::agents::model::{Cassette, CassetteError, ReplayMode};

/// How a replayed call is matched with a recorded one.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Mode {
    /// By position among the agent path's calls, the request equal.
    #[default]
    Strict,
    /// By content: an equal request, else the nearest.
    Lenient,
}

/// The cassette flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct TapeArgs {
    /// Records every model call, tool call, MCP server's tools and remote
    /// (A2A) agent's turn into DIR (JSON lines, by agent path and call
    /// index, secrets redacted); `serve` records each run into
    /// DIR/<run id>/.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub(crate) record: Option<PathBuf>,
    /// Replays what DIR recorded instead of calling models, running tools,
    /// starting MCP servers or reaching remote agents: offline and
    /// deterministic; a call not recorded fails naming the agent path,
    /// the call and how the request differs (`serve`: every run replays
    /// DIR from its start).
    #[arg(long, value_name = "DIR")]
    pub(crate) replay: Option<PathBuf>,
    /// How a replayed call is matched: `strict` (by position, the request
    /// equal) or `lenient` (by content: an equal request, else the
    /// nearest).
    #[arg(long, value_enum, default_value_t = Mode::Strict, requires = "replay")]
    pub(crate) replay_mode: Mode,
}

impl TapeArgs {
    /// The cassette the flags ask for, if any; with `each_run`, one tape
    /// per run (`serve`).
    pub(crate) fn open(&self, each_run: bool) -> Result<Option<Arc<Cassette>>, CassetteError> {
        let mode = match self.replay_mode {
            Mode::Strict => ReplayMode::Strict,
            Mode::Lenient => ReplayMode::Lenient,
        };
        Ok(match (&self.record, &self.replay, each_run) {
            (Some(dir), _, false) => Some(Cassette::record(dir)?),
            (Some(dir), _, true) => Some(Cassette::record_each_run(dir)?),
            (None, Some(dir), false) => Some(Cassette::replay_with(dir, mode)?),
            (None, Some(dir), true) => Some(Cassette::replay_each_run(dir, mode)?),
            (None, None, _) => None,
        })
    }
}
