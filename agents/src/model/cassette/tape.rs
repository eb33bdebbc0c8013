//! One run's tape: where its calls are written (recording), or which
//! recorded calls it has used (replaying), and the next call index of
//! each agent path.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

use super::file::{self, A2A_FILE, CALLS_FILE, CassetteError, MCP_FILE, TOOLS_FILE};
use super::matching::{self, Recorded, ReplayMode};

/// The files of a tape.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Models,
    Tools,
    Servers,
    Agents,
}

impl Kind {
    fn index(self) -> usize {
        self as usize
    }
}

/// One run's tape (see the module's doc).
pub(super) struct Tape {
    /// Recording: a writer per kind (MCP servers and remote agents made
    /// on first use).
    writers: Option<[file::Writer; 4]>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The next call index of each path, per kind.
    next: [HashMap<String, u64>; 4],
    /// The recorded calls used, per kind (indexes into the recording).
    used: [HashSet<usize>; 4],
}

impl Tape {
    /// A tape recording into `dir` (made if need be; its files replaced).
    pub(super) fn recording(dir: &Path) -> Result<Self, CassetteError> {
        Ok(Tape {
            writers: Some([
                file::Writer::create(dir, CALLS_FILE, true)?,
                file::Writer::create(dir, TOOLS_FILE, true)?,
                file::Writer::create(dir, MCP_FILE, false)?,
                file::Writer::create(dir, A2A_FILE, false)?,
            ]),
            state: Mutex::default(),
        })
    }

    /// A tape replaying.
    pub(super) fn replaying() -> Self {
        Tape {
            writers: None,
            state: Mutex::default(),
        }
    }

    /// The next call index of `path` (of `kind`).
    pub(super) fn take_index(&self, kind: Kind, path: &str) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let n = state.next[kind.index()]
            .entry(path.to_string())
            .or_insert(0);
        let i = *n;
        *n += 1;
        i
    }

    /// Writes `entry` (recording; nothing when replaying).
    pub(super) fn append(
        &self,
        kind: Kind,
        entry: &impl Serialize,
        secrets: &[String],
    ) -> Result<(), CassetteError> {
        match &self.writers {
            Some(w) => w[kind.index()].append(entry, secrets),
            None => Ok(()),
        }
    }

    /// The recorded call of `entries` answering call `call` of `path`
    /// (made by the agent named `name`) asking `now` (see [`matching`]),
    /// marked used.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pick<'a, T: Recorded>(
        &self,
        kind: Kind,
        entries: &'a [T],
        path: &str,
        name: &str,
        call: u64,
        now: &serde_json::Value,
        mode: ReplayMode,
    ) -> Result<&'a T, String> {
        let noun = match kind {
            Kind::Tools => matching::Kind::Tool,
            Kind::Agents => matching::Kind::Agent,
            Kind::Models | Kind::Servers => matching::Kind::Model,
        };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let used = &mut state.used[kind.index()];
        let i = matching::pick(entries, used, path, name, call, now, mode, noun)?;
        used.insert(i);
        Ok(&entries[i])
    }

    /// How many of each kind's recorded calls were used, for
    /// [`Cassette::unused`](super::Cassette::unused).
    pub(super) fn used(&self, kind: Kind) -> HashSet<usize> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.used[kind.index()].clone()
    }
}
