//! A stretch of a served run: what it starts from (a thread, a session's
//! next turn, an answer) and running it to its end in the background, its
//! session saved after.
//!
//! A session's turn is loaded once: the caller that loaded it to keep it
//! (double texting's rollback, `texting.rs`) hands it on, and the turn
//! runs on it. Turns of one session do not overlap: double texting starts
//! a session's run once the one before it has ended.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;
use troupe::config::StoreKind;
use troupe::store::RunFailure;
use troupe::{Message, RunResult, Thread, Workflow};

use super::lease_note::Note;
use super::run::Run;
pub(crate) use super::start::Start;
use super::state::Shared;
use super::team::Team;

/// Runs a stretch of `run` in the background, holding a run slot.
pub(crate) fn spawn(state: Shared, run: Arc<Run>, start: Start, slot: OwnedSemaphorePermit) {
    tokio::spawn(async move {
        let result = drive(&state, &run, start, None).await;
        run.finish(result);
        drop(slot);
    });
}

/// Runs a stretch of `run` from `start` to its end; `stored` is its
/// session as the caller loaded it, if it did.
pub(crate) async fn drive(
    state: &Shared,
    run: &Run,
    start: Start,
    stored: Option<Option<Box<Thread>>>,
) -> Result<RunResult, String> {
    let team = state.team(Some(&run.team)).map_err(|e| e.message)?;
    // One owner per run: a `troupe run --resume` of this run (or another
    // server on the same store) waits until this stretch ends. The note
    // tells a worker taking the lease over what the run is.
    let _lease = match super::lease_ahead::claim(&run.id) {
        Some(lease) => lease,
        // Only a store several workers share keeps a note (PostgreSQL's);
        // the others are not handed one to throw away.
        None if team.store.kind == StoreKind::Postgres => {
            let note = Note::of(run, &start).encode();
            team.store
                .leases
                .acquire_noting(&run.id, &note)
                .await
                .map_err(|e| e.to_string())?
        }
        None => team
            .store
            .leases
            .acquire(&run.id)
            .await
            .map_err(|e| e.to_string())?,
    };
    let result = stretch(team, run, start, stored).await;
    record_failure(team, run, &result).await;
    result
}

/// Keeps in the store that `run` failed, when `result` says it did (and
/// it was not cancelled), while its lease is still held: the run is then
/// listed failed, not under way, and no worker takes it over.
pub(crate) async fn record_failure(team: &Team, run: &Run, result: &Result<RunResult, String>) {
    let Err(error) = result else {
        return;
    };
    if run.ctx.is_cancelled() {
        return;
    }
    let failure = RunFailure::new(troupe::secrets::redact(error).into_owned());
    if let Err(e) = team.store.checkpoints.save_failure(&run.id, &failure).await {
        super::say(&format!(
            "troupe serve: run `{}` failed and its failure was not recorded: {e}",
            run.id
        ));
    }
}

/// Runs a stretch of `run` from `start` to its end, its lease held by the
/// caller; `stored` is its session as the caller loaded it (else it is
/// loaded here).
pub(crate) async fn stretch(
    team: &Team,
    run: &Run,
    start: Start,
    stored: Option<Option<Box<Thread>>>,
) -> Result<RunResult, String> {
    let workflow = &team.built.workflow;
    match (start, &run.session) {
        (
            Start::Fork {
                from,
                checkpoint,
                edits,
            },
            _,
        ) => workflow
            .fork(
                team.store.checkpoints.as_ref(),
                &from,
                checkpoint,
                &run.id,
                &edits,
                &run.ctx,
            )
            .await
            .map_err(|e| e.to_string()),
        (Start::Thread(thread), _) => workflow
            .run(*thread, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (Start::Session(text), Some(id)) => {
            // A session whose last turn asked a question: this message is
            // the answer (the oldest question open), as a chat user gives it.
            let stored = match stored {
                Some(stored) => stored,
                None => team
                    .store
                    .threads
                    .load_thread(id)
                    .await
                    .map_err(|e| format!("cannot read session `{id}`: {e}"))?
                    .map(Box::new),
            };
            let asked = stored
                .as_ref()
                .and_then(|t| Workflow::pending_requests(t).into_iter().next());
            match (stored, asked) {
                (Some(thread), Some(q)) => {
                    let r = workflow
                        .respond_in_thread(*thread, &q.id, text, &run.ctx)
                        .await
                        .map_err(|e| e.to_string())?;
                    save(team, id, &r.thread).await?;
                    Ok(r)
                }
                (stored, _) => turn(team, run, id, stored.unwrap_or_default(), text).await,
            }
        }
        (Start::Session(text), None) => workflow
            .run_task(text, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (
            Start::Answer {
                request,
                answer,
                thread,
            },
            session,
        ) => {
            let r = workflow
                .respond_in_thread(*thread, &request, answer, &run.ctx)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(id) = session {
                save(team, id, &r.thread).await?;
            }
            Ok(r)
        }
    }
}

/// A user turn of session `id` (stored as `thread`): the message added,
/// the workflow run, the thread it returns saved — or, when it fails, the
/// thread its error carries (the conversation up to the failure), so
/// nothing that happened is lost. A save that fails fails the turn.
async fn turn(
    team: &Team,
    run: &Run,
    id: &str,
    mut thread: Box<Thread>,
    text: String,
) -> Result<RunResult, String> {
    thread.push(Message::user(text));
    match team.built.workflow.run(*thread, &run.ctx).await {
        Ok(r) => match team.store.threads.save_thread(id, &r.thread).await {
            Ok(()) => Ok(r),
            Err(e) => Err(format!(
                "conversation '{id}': the turn ran but was not saved: {e}"
            )),
        },
        Err(e) => {
            if let Some(thread) = e.thread()
                && let Err(not_saved) = team.store.threads.save_thread(id, thread).await
            {
                return Err(format!(
                    "conversation '{id}': {e} (and its thread was not saved: {not_saved})"
                ));
            }
            Err(format!("conversation '{id}': {e}"))
        }
    }
}

/// Saves the thread an answer ran on as session `id`.
async fn save(team: &Team, id: &str, thread: &Thread) -> Result<(), String> {
    team.store
        .threads
        .save_thread(id, thread)
        .await
        .map_err(|e| format!("the answer ran but session `{id}` was not saved: {e}"))
}
