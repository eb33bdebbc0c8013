//! `resume[]`: answering the interrupts a thread's last run ended with.
//! The run waiting is the newest of the thread's runs waiting for input;
//! when none is (the server restarted since), the thread's stored session
//! holds the questions still open, and a new run answers them from there
//! (with a `checkpoint:` store, so across restarts). Every open question
//! needs an entry, and no entry may name another.

use std::sync::Arc;

use troupe::Workflow;

use super::input::{ResumeEntry, ResumeStatus, RunAgentInput};
use super::stream::by_id;
use crate::serve::drive::Start;
use crate::serve::error::ApiError;
use crate::serve::run::{Run, Status};
use crate::serve::state::Shared;
use crate::serve::{board, runs, texting};

/// What a resume comes to.
pub(crate) enum Resumed {
    /// The run going on, where its new events start, the entries that
    /// answer questions it has not come back to yet.
    Going(Arc<Run>, usize, Vec<ResumeEntry>),
    /// Refused (the protocol's `RESUME_INVALID`): why.
    Refused(String),
}

/// The newest run of `team` in session `thread` waiting for input: of
/// this worker, else of another on a shared database (`board/`).
pub(crate) async fn waiting_run(
    state: &Shared,
    team: &str,
    thread: &str,
) -> Result<Option<Arc<Run>>, ApiError> {
    let here = state.runs.all().into_iter().find(|r| {
        r.team == team
            && r.session.as_deref() == Some(thread)
            && r.inner().status() == Status::WaitingForInput
    });
    match here {
        Some(run) => Ok(Some(run)),
        None => board::waiting_elsewhere(state, team, thread).await,
    }
}

/// The ids of `run`'s open questions.
pub(crate) fn open_ids(run: &Run) -> Vec<String> {
    run.inner().requests.iter().map(|q| q.id.clone()).collect()
}

/// Answers the interrupts `input.resume` names: in `waiting`, else in the
/// thread's stored session.
pub(crate) async fn resume(
    state: &Shared,
    team: &str,
    input: &RunAgentInput,
    waiting: Option<Arc<Run>>,
) -> Result<Resumed, ApiError> {
    let entries = input.resume.clone().unwrap_or_default();
    if entries.is_empty() {
        return Ok(Resumed::Refused("`resume` is empty".into()));
    }
    let Some(run) = waiting else {
        return resume_stored(state, team, input, entries).await;
    };
    if let Err(why) = covers(&open_ids(&run), &entries) {
        return Ok(Resumed::Refused(why));
    }
    let mut entries = entries;
    let from = run.inner().events.len();
    let first = entries.remove(0);
    // A run of another worker is answered (or cancelled) through it.
    match first.status {
        ResumeStatus::Cancelled if board::is_remote(&run) => {
            board::cancel(state, &run.id).await?;
        }
        ResumeStatus::Cancelled => {
            runs::cancel_run(&run)?;
        }
        ResumeStatus::Resolved => {
            let text = first.answer()?;
            board::answer(state, &run.id, Some(&first.interrupt_id), text).await?;
        }
    }
    Ok(Resumed::Going(run, from, entries))
}

/// Answers the questions open in the thread's stored session, in a new run.
async fn resume_stored(
    state: &Shared,
    team: &str,
    input: &RunAgentInput,
    mut entries: Vec<ResumeEntry>,
) -> Result<Resumed, ApiError> {
    let session = &input.thread_id;
    let stored = state
        .team(Some(team))?
        .store
        .threads
        .load_thread(session)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read session `{session}`: {e}")))?;
    let Some(thread) = stored else {
        return Ok(Resumed::Refused(format!(
            "thread `{session}` has no run waiting for input: nothing to resume"
        )));
    };
    let open: Vec<String> = Workflow::pending_requests(&thread)
        .into_iter()
        .map(|q| q.id)
        .collect();
    if open.is_empty() {
        return Ok(Resumed::Refused(format!(
            "thread `{session}` has no run waiting for input: nothing to resume"
        )));
    }
    if let Err(why) = covers(&open, &entries) {
        return Ok(Resumed::Refused(why));
    }
    if entries.iter().any(|e| e.status == ResumeStatus::Cancelled) {
        return Ok(Resumed::Refused(format!(
            "thread `{session}`'s run waiting for input ended with the server; \
             its questions can be answered (`resolved`), not cancelled"
        )));
    }
    let first = entries.remove(0);
    let answer = first.answer()?;
    let slot = state.limits.run_slot()?;
    let (run, turn) = crate::serve::board::admit(state, team, Some(session), None, || {
        state.runs.create(team, &answer, Some(session.clone()))
    })
    .await?;
    let start = Start::Answer {
        request: first.interrupt_id,
        answer,
        thread: Box::new(thread),
    };
    texting::spawn(state.clone(), run.clone(), start, slot, turn);
    Ok(Resumed::Going(run, 0, entries))
}

/// Whether `entries` answer every question of `open` and nothing else;
/// why not.
fn covers(open: &[String], entries: &[ResumeEntry]) -> Result<(), String> {
    let given = by_id(entries);
    if let Some(unknown) = given.keys().find(|id| !open.iter().any(|o| o == *id)) {
        return Err(format!(
            "`resume` answers interrupt `{unknown}`, which is not open; open: {}",
            open.join(", ")
        ));
    }
    let left: Vec<&str> = open
        .iter()
        .map(String::as_str)
        .filter(|o| !given.contains_key(o))
        .collect();
    if !left.is_empty() {
        return Err(format!(
            "`resume` leaves interrupts unanswered: {} (every open interrupt needs an entry)",
            left.join(", ")
        ));
    }
    Ok(())
}
