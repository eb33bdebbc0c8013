//! Carrying on a run taken over from a worker that died (`takeover.rs`):
//! from its last checkpoint when it has one, else started again from its
//! lease's note; a session turn's thread is then saved as the session,
//! unless the session has moved on meanwhile.
//!
//! Turns are at least once: a turn under way when the worker died is run
//! again from the checkpoint before it. Messages are exactly once: a
//! checkpoint's thread holds each message once, and the session is saved
//! from the run's thread only when the stored one is a prefix of it (the
//! worker that died saved nothing of the turn, or saved all of it).

use troupe::{RunResult, Thread, history::summarize_run};

use super::drive::{Start, stretch};
use super::lease_note::{Again, Note};
use super::run::Run;
use super::say;
use super::team::Team;

/// Runs `run` (taken over, its lease held) to its end.
pub(crate) async fn carry_on(team: &Team, run: &Run, note: &Note) -> Result<RunResult, String> {
    let store = team.store.checkpoints.as_ref();
    let summary = summarize_run(store, &run.id)
        .await
        .map_err(|e| format!("cannot read run `{}` to take it over: {e}", run.id))?;
    if summary.is_none() {
        // Died before its first checkpoint: nothing of it was kept (a
        // session turn saves the session only at its end), so it starts
        // again from what it was asked.
        let start = match (note.again, &note.session) {
            (Again::SessionTurn, Some(_)) => Start::Session(note.task.clone()),
            (Again::Task, _) => {
                Start::Thread(Box::new(Thread::from_messages([troupe::Message::user(
                    note.task.clone(),
                )])))
            }
            _ => {
                return Err(format!(
                    "run `{}` was cut short before its first checkpoint and cannot be started again from what it was asked",
                    run.id
                ));
            }
        };
        return stretch(team, run, start, None).await;
    }
    let result = team
        .built
        .workflow
        .run_from_checkpoint(store, &run.id, None, &run.ctx)
        .await;
    if let Some(session) = &note.session {
        let thread = match &result {
            Ok(r) => Some(&r.thread),
            Err(e) => e.thread(),
        };
        if let Some(thread) = thread {
            save_turn(team, session, thread).await?;
        }
    }
    result.map_err(|e| e.to_string())
}

/// Saves `thread` (the taken-over turn's) as session `id` when the stored
/// session is a prefix of it.
async fn save_turn(team: &Team, id: &str, thread: &Thread) -> Result<(), String> {
    let threads = &team.store.threads;
    let stored = threads
        .load_thread(id)
        .await
        .map_err(|e| format!("cannot read session `{id}`: {e}"))?
        .unwrap_or_default();
    let ids = |t: &Thread| t.messages().iter().map(|m| m.id).collect::<Vec<_>>();
    let (old, new) = (ids(&stored), ids(thread));
    if old.starts_with(&new) {
        // Saved by the worker that died, after the run's last checkpoint.
        return Ok(());
    }
    if !new.starts_with(&old) {
        say(&format!(
            "troupe serve: session `{id}` moved on while its turn was taken over: the turn's messages were not saved to it"
        ));
        return Ok(());
    }
    threads
        .save_thread(id, thread)
        .await
        .map_err(|e| format!("the turn ran but session `{id}` was not saved: {e}"))
}
