//! A stretch of a served run: what it starts from (a thread, a session's
//! next turn, an answer) and running it to its end in the background, its
//! session saved after.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;
use troupe::store::RunFailure;
use troupe::{RunResult, Thread, Workflow};

use super::lease_note::Note;
use super::run::Run;
pub(crate) use super::start::Start;
use super::state::Shared;
use super::team::Team;

/// Runs a stretch of `run` in the background, holding a run slot.
pub(crate) fn spawn(state: Shared, run: Arc<Run>, start: Start, slot: OwnedSemaphorePermit) {
    tokio::spawn(async move {
        let result = drive(&state, &run, start).await;
        run.finish(result);
        drop(slot);
    });
}

/// Runs a stretch of `run` from `start` to its end.
pub(crate) async fn drive(state: &Shared, run: &Run, start: Start) -> Result<RunResult, String> {
    let team = state.team(Some(&run.team)).map_err(|e| e.message)?;
    // One owner per run: a `troupe run --resume` of this run (or another
    // server on the same store) waits until this stretch ends. The note
    // tells a worker taking the lease over what the run is.
    let _lease = match super::lease_ahead::claim(&run.id) {
        Some(lease) => lease,
        None => {
            let note = Note::of(run, &start).encode();
            team.store
                .leases
                .acquire_noting(&run.id, &note)
                .await
                .map_err(|e| e.to_string())?
        }
    };
    let result = stretch(team, run, start).await;
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
/// caller.
pub(crate) async fn stretch(team: &Team, run: &Run, start: Start) -> Result<RunResult, String> {
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
            .run(thread, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (Start::Session(text), Some(id)) => {
            // A session whose last turn asked a question: this message is
            // the answer (the oldest question open), as a chat user gives it.
            let stored = team
                .store
                .threads
                .load_thread(id)
                .await
                .map_err(|e| format!("cannot read session `{id}`: {e}"))?;
            let asked = stored
                .as_ref()
                .and_then(|t| Workflow::pending_requests(t).into_iter().next());
            match (stored, asked) {
                (Some(thread), Some(q)) => {
                    let r = workflow
                        .respond_in_thread(thread, &q.id, text, &run.ctx)
                        .await
                        .map_err(|e| e.to_string())?;
                    save(team, id, &r.thread).await?;
                    Ok(r)
                }
                _ => team
                    .session
                    .clone()
                    .with_context(run.ctx.clone())
                    .send(id, text)
                    .await
                    .map_err(|e| e.to_string()),
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
                .respond_in_thread(thread, &request, answer, &run.ctx)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(id) = session {
                save(team, id, &r.thread).await?;
            }
            Ok(r)
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
