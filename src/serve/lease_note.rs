//! What a served run's lease says it is (see
//! [`RunLeases::acquire_noting`](troupe::store::RunLeases::acquire_noting)):
//! the team, the session it is a turn of, the task, and whether the run
//! can be started again from that alone. A worker that takes over a lease
//! its holder left behind reads it: to carry the run on under the right
//! team, to save a session turn's thread, and to start again a run that
//! died before its first checkpoint (its input is in no checkpoint).

use serde::{Deserialize, Serialize};
use troupe::Thread;

use super::run::Run;
use super::start::Start;

/// How a run can be started again from its note alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Again {
    /// The next user turn of its session, `task` the user's message.
    SessionTurn,
    /// A run of `task` alone.
    Task,
    /// Only from a checkpoint (an answer, a fork, a thread of several
    /// messages).
    FromCheckpoint,
}

/// A served run's lease note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Note {
    /// The team.
    pub(crate) team: String,
    /// The session it is a turn of.
    pub(crate) session: Option<String>,
    /// The user's message.
    pub(crate) task: String,
    /// How it starts again.
    pub(crate) again: Again,
}

impl Note {
    /// The note of `run`'s stretch starting from `start`.
    pub(crate) fn of(run: &Run, start: &Start) -> Note {
        let again = match (start, &run.session) {
            (Start::Session(_), Some(_)) => Again::SessionTurn,
            (Start::Session(_), None) => Again::Task,
            (Start::Thread(thread), _) if is_task(thread, &run.task) => Again::Task,
            _ => Again::FromCheckpoint,
        };
        Note {
            team: run.team.clone(),
            session: run.session.clone(),
            task: run.task.clone(),
            again,
        }
    }

    /// As the lease keeps it (JSON).
    pub(crate) fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A note read back; `None` for a lease that is not a served run's
    /// (a `troupe run`'s has none).
    pub(crate) fn decode(text: &str) -> Option<Note> {
        serde_json::from_str(text).ok()
    }
}

/// Whether `thread` is one user message saying `task`.
fn is_task(thread: &Thread, task: &str) -> bool {
    match thread.messages() {
        [only] => &*only.source == "user" && only.text_content() == task,
        _ => false,
    }
}
