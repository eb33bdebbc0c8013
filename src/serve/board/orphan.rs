//! An answer to a run waiting for input whose worker died: nobody holds
//! the run (a run waiting for input holds no lease, so the takeover loop
//! does not take it over), so the
//! worker the answer reached takes it over — its lease, free once its
//! holder died, keeps two workers from doing so — and answers it from its
//! last checkpoint, which holds the question, then runs it on; the
//! session it is a turn of gets the thread it ends with.

use std::sync::Arc;

use troupe::store::BoardRun;

use super::super::error::ApiError;
use super::super::run::Run;
use super::super::say;
use super::super::state::Shared;
use super::{Board, adopted};

/// Answers `record`'s run (waiting for input, its worker dead) here; the
/// run and where the answer's events start.
pub(super) async fn answer(
    state: &Shared,
    board: &Board,
    record: BoardRun,
    request_id: Option<&str>,
    text: String,
) -> Result<(Arc<Run>, usize), ApiError> {
    let id = record.id.clone();
    let open: Vec<String> = record
        .detail
        .get("requests")
        .and_then(|v| v.as_array())
        .map(|qs| {
            qs.iter()
                .filter_map(|q| q.get("id").and_then(|i| i.as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let request = match request_id {
        Some(r) if open.iter().any(|o| o == r) => r.to_string(),
        Some(r) => {
            return Err(ApiError::not_found(format!(
                "run `{id}` has no open request `{r}`; open: {}",
                open.join(", ")
            )));
        }
        None => open
            .first()
            .cloned()
            .ok_or_else(|| ApiError::conflict(format!("run `{id}` has no open request")))?,
    };
    let team = state.team(Some(&record.team))?;
    let lease = team.store.leases.acquire(&id).await.map_err(|e| {
        ApiError::conflict(format!(
            "run `{id}` waited on a worker that stopped, and is held still: {e}"
        ))
    })?;
    let slot = state.limits.run_slot()?;
    let task = record
        .detail
        .get("task")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let run = state
        .runs
        .adopt(&id, &record.team, task, record.session.clone())
        .ok_or_else(|| ApiError::conflict(format!("run `{id}` is being answered already")))?;
    board.mirrors().remove(&id);
    say(&format!(
        "troupe serve: `{}`: took over run `{id}` to answer it: its worker stopped",
        record.team
    ));
    adopted(state, &run).await;
    let from = run.inner().events.len();
    let (state, session, go) = (state.clone(), record.session.clone(), run.clone());
    tokio::spawn(async move {
        let _lease = lease;
        let result = match state.team(Some(&go.team)) {
            Ok(team) => {
                let store = team.store.checkpoints.as_ref();
                match team
                    .built
                    .workflow
                    .respond(store, &go.id, &request, text, &go.ctx)
                    .await
                {
                    Ok(r) => match &session {
                        Some(s) => match team.store.threads.save_thread(s, &r.thread).await {
                            Ok(()) => Ok(r),
                            Err(e) => Err(format!(
                                "the answer ran but session `{s}` was not saved: {e}"
                            )),
                        },
                        None => Ok(r),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.message),
        };
        go.finish(result);
        drop(slot);
    });
    Ok((run, from))
}
