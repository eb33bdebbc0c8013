//! [`TrackerState`]: what a stop condition's tracker has counted, as a
//! checkpoint keeps it, and its bytes written by hand.

/// What a [`StopTracker`](super::StopTracker) has counted, as kept in checkpoints. Its token
/// counts are those of the run's input messages; the run's own spend is
/// kept with the run's counters.
///
/// Its encoding is also written by hand ([`TrackerState::write`], which
/// `checkpoint::snapshot_refs` calls for every checkpoint): change the two
/// together (the test `a_tracker_state_written_by_hand_is_what_serde_writes`
/// pins them).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct TrackerState {
    pub(super) latched: Vec<bool>,
    pub(super) messages: u64,
    pub(super) turns: u64,
    pub(super) tokens: u64,
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
    pub(super) timed_out: bool,
}

impl TrackerState {
    /// Appends what serializing it writes (a checkpoint writes one each
    /// time: by hand, see `codec::raw`; the test below holds it to serde).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        use crate::checkpoint::codec::raw;
        raw::len(out, self.latched.len());
        out.extend(self.latched.iter().map(|&b| u8::from(b)));
        for v in [
            self.messages,
            self.turns,
            self.tokens,
            self.prompt_tokens,
            self.completion_tokens,
        ] {
            raw::u64(out, v);
        }
        out.push(u8::from(self.timed_out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracker state written by hand is the bytes serde writes.
    #[test]
    fn a_tracker_state_written_by_hand_is_what_serde_writes() {
        let states = [
            TrackerState::default(),
            TrackerState {
                latched: vec![true, false, true],
                messages: 251,
                turns: 1 << 33,
                tokens: 65_536,
                prompt_tokens: 7,
                completion_tokens: u64::MAX,
                timed_out: true,
            },
        ];
        for state in states {
            let mut by_hand = Vec::new();
            state.write(&mut by_hand);
            assert_eq!(by_hand, crate::checkpoint::codec::encode(&state).unwrap());
        }
    }
}
