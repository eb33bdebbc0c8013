//! [`Durability`]: what a saved checkpoint survives, chosen per store (or
//! per workflow).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a checkpoint survives once saved.
///
/// | | `Process` (default) | `Fsync` | `Exit` |
/// |---|---|---|---|
/// | when | after every superstep | after every superstep | when the run stops |
/// | survives `kill -9` | yes | yes | no (nothing saved until the end) |
/// | survives power loss | no | yes | no |
/// | [`FileStore`](super::FileStore) | appended to the run's log (written to the OS) | appended, then `fsync` | one append at the end |
/// | [`SqliteStore`](super::SqliteStore) | WAL, `synchronous=NORMAL` | WAL, `synchronous=FULL` | WAL, `NORMAL`, at the end |
/// | [`MemoryStore`](super::MemoryStore) | in the process | in the process | in the process |
///
/// A run saves each checkpoint before it acts on the superstep's results,
/// so with `Process` or `Fsync` a killed run resumes from the last
/// superstep it finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Handed to the operating system before the run goes on: survives the
    /// process being killed, not the machine losing power.
    #[default]
    Process,
    /// Flushed to the disk (`fsync`) before the run goes on: survives power
    /// loss too, at the cost of a disk flush per checkpoint.
    Fsync,
    /// Saved only when the run stops (completes, fails, is interrupted or
    /// waits for input): the cheapest, but a killed run restarts from the
    /// beginning.
    Exit,
}

impl Durability {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Process => "process",
            Durability::Fsync => "fsync",
            Durability::Exit => "exit",
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A durability name that is not one of `process`, `fsync`, `exit`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown durability '{0}': expected process, fsync or exit")]
pub struct UnknownDurability(pub String);

impl FromStr for Durability {
    type Err = UnknownDurability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "process" => Ok(Durability::Process),
            "fsync" => Ok(Durability::Fsync),
            "exit" => Ok(Durability::Exit),
            other => Err(UnknownDurability(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_named() {
        for d in [Durability::Process, Durability::Fsync, Durability::Exit] {
            assert_eq!(d.as_str().parse::<Durability>(), Ok(d));
        }
        let e = "sometimes".parse::<Durability>().unwrap_err();
        assert!(e.to_string().contains("'sometimes'"), "{e}");
    }
}
