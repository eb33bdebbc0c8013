//! [`TrackerState`]: what a stop condition's tracker has counted, as a
//! checkpoint keeps it.

/// What a [`StopTracker`](super::StopTracker) has counted, as kept in checkpoints. Its token
/// counts are those of the run's input messages; the run's own spend is
/// kept with the run's counters.
///
/// Its checkpoint encoding (serde + bincode) is also written by hand, in
/// `checkpoint::snapshot_refs` (`write_tracker_state`, for every
/// checkpoint): change the two together (the test
/// `a_tracker_state_written_by_hand_is_what_serde_writes` pins them).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct TrackerState {
    pub(crate) latched: Vec<bool>,
    pub(crate) messages: u64,
    pub(crate) turns: u64,
    pub(crate) tokens: u64,
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) timed_out: bool,
}
