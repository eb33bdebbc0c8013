//! What a stretch of a served run starts from: its own file, below
//! `drive.rs` (which runs it) and the lease files (which note it), so
//! neither imports the other for it.

use troupe::Thread;

/// What a stretch of a run starts from.
///
/// Small (its threads boxed): every future on the way to the run holds
/// one, for as long as the run goes.
pub(crate) enum Start {
    /// A thread (the task, or the messages an OpenAI client sent).
    Thread(Box<Thread>),
    /// The next user turn of the run's session.
    Session(String),
    /// An answer to request `request` in the thread of a run waiting.
    Answer {
        /// The request's id.
        request: String,
        /// The answer.
        answer: String,
        /// The thread the run ended waiting with.
        thread: Box<Thread>,
    },
    /// Run `from` carried on from `checkpoint` (`POST /runs/{id}/fork`).
    Fork {
        /// The run forked.
        from: String,
        /// Its checkpoint to carry on from.
        checkpoint: troupe::store::CheckpointId,
        /// What to change first.
        edits: Box<troupe::ForkEdits>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_stays_small() {
        // Each future on the way to a served run (the task, `drive`,
        // `stretch`) holds one for as long as the run goes, arguments and
        // locals both: with a thread inline it was 192 bytes.
        assert!(
            std::mem::size_of::<Start>() <= 64,
            "{}",
            std::mem::size_of::<Start>()
        );
    }
}
