//! [`StoreError`]: what can go wrong saving or loading checkpoints and
//! threads. Every variant names the file, database, run or id involved, so
//! an operator can find the culprit without a debugger.

use std::path::PathBuf;

use crate::checkpoint::codec::CodecError;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("cannot {action} '{}': {source}", path.display())]
    Io {
        /// What the store was doing (`read`, `write`, `rename`, ...).
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The SQLite database returned an error.
    #[error("SQLite database '{db}': {source}")]
    Sqlite {
        /// The database file (or `:memory:`).
        db: String,
        /// The underlying error (a `rusqlite::Error`); boxed so the variant
        /// exists whether or not the `sqlite` feature is on.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Stored data is damaged: truncated, not decodable, or its checksum
    /// does not match.
    #[error("{what} is corrupt: {reason}")]
    Corrupt {
        /// The file, row or checkpoint concerned.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Stored data was written in an encoding this build cannot read.
    #[error("{what} has format version {found}, this build reads version {expected}")]
    UnsupportedVersion {
        /// The file or row concerned.
        what: String,
        /// The version found.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// A run or conversation id cannot be used as a key.
    #[error("invalid {kind} '{id}': {reason}")]
    InvalidId {
        /// `run id` or `conversation id`.
        kind: &'static str,
        /// The id given (escaped for display).
        id: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A value could not be encoded for storage.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// The background task doing blocking I/O did not finish.
    #[error("store task failed: {0}")]
    Task(String),
}

impl StoreError {
    /// An [`StoreError::Io`] error.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        StoreError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// A [`StoreError::Corrupt`] error.
    pub(crate) fn corrupt(what: impl Into<String>, reason: impl Into<String>) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// Whether the error reports damaged stored data.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
    }
}

impl From<tokio::task::JoinError> for StoreError {
    fn from(e: tokio::task::JoinError) -> Self {
        StoreError::Task(e.to_string())
    }
}
