//! [`SaveErrors`]: what a run does when a checkpoint cannot be saved,
//! chosen per store.

use std::fmt;
use std::str::FromStr;

/// What a run does when one of its checkpoints cannot be saved (a full
/// disk, a file that cannot be written, a database that refuses the row).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SaveErrors {
    /// The run stops there and fails with the store's error
    /// ([`RunError::CheckpointNotSaved`](crate::RunError::CheckpointNotSaved)),
    /// naming the last checkpoint saved, to resume from.
    #[default]
    Fail,
    /// The run goes on with a warning (an
    /// [`Event::Warning`](crate::Event::Warning)); its next checkpoint is
    /// saved whole. A kill before a later save succeeds loses the work
    /// since the last checkpoint saved.
    Warn,
}

impl SaveErrors {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            SaveErrors::Fail => "fail",
            SaveErrors::Warn => "warn",
        }
    }
}

impl fmt::Display for SaveErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SaveErrors {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fail" => Ok(SaveErrors::Fail),
            "warn" => Ok(SaveErrors::Warn),
            other => Err(format!("unknown on_error '{other}': expected fail or warn")),
        }
    }
}
