//! [`InboxConfigError`]: what can be wrong with one inbox: its options, a duration
//! string, a snapshot. (A router's errors, [`RouterError`](crate::RouterError),
//! are with its validation.)

/// An invalid [`InboxConfig`](crate::InboxConfig), or a duration string that
/// does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InboxConfigError {
    /// `batch_size` is 0: an invocation would never take a message.
    #[error("batch size must be at least 1")]
    ZeroBatchSize,

    /// `capacity` is `Some(0)`: the inbox could never hold a message.
    #[error("capacity must be at least 1 (use no capacity for an unbounded inbox)")]
    ZeroCapacity,

    /// The inbox could fill up without ever holding a full batch.
    #[error(
        "capacity {capacity} is smaller than batch size {batch_size}: a full inbox could never fill a batch"
    )]
    CapacityBelowBatchSize {
        /// The configured capacity.
        capacity: usize,
        /// The configured batch size.
        batch_size: usize,
    },

    /// A humantime duration string (such as `"1h"` or `"30s"`) did not parse.
    #[error("invalid {option} duration {input:?}: {source}")]
    InvalidDuration {
        /// The option being set, such as `"ttl"`.
        option: &'static str,
        /// The string as given.
        input: String,
        /// Why it did not parse.
        source: humantime::DurationError,
    },

    /// [`Inbox::restore`](crate::Inbox::restore) got more messages than the
    /// configured capacity allows.
    #[error("snapshot holds {len} messages but the inbox capacity is {capacity}")]
    SnapshotExceedsCapacity {
        /// Messages in the snapshot.
        len: usize,
        /// The configured capacity.
        capacity: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_error_names_both_numbers() {
        let text = InboxConfigError::CapacityBelowBatchSize {
            capacity: 2,
            batch_size: 5,
        }
        .to_string();
        assert!(text.contains('2') && text.contains('5'), "{text}");
    }
}
