//! What the runs API, A2A and the workers' board do to one run of this
//! server: answer its open question, cancel it. Below `runs.rs` (the
//! routes) and `board/` (which forwards to the worker holding a run), so
//! neither imports the other for it.

use std::sync::Arc;

use super::drive::{Start, spawn};
use super::error::ApiError;
use super::run::{Run, Status};
use super::state::Shared;

/// Answers an open request of `run` (the oldest when none is named) and
/// runs it on in the background (the runs API and A2A follow-ups).
pub(crate) fn answer(
    state: &Shared,
    run: &Arc<Run>,
    request_id: Option<&str>,
    answer: String,
) -> Result<(), ApiError> {
    let id = &run.id;
    let slot = state.limits.run_slot()?;
    let start = {
        let mut inner = run.inner();
        if inner.status() != Status::WaitingForInput {
            return Err(ApiError::conflict(format!(
                "run `{id}` is {}, not waiting for input",
                inner.status().as_str()
            )));
        }
        let request = match request_id {
            Some(r) => inner.requests.iter().find(|q| q.id == r).ok_or_else(|| {
                ApiError::not_found(format!(
                    "run `{id}` has no open request `{r}`; open: {}",
                    inner
                        .requests
                        .iter()
                        .map(|q| q.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
            None => inner
                .requests
                .first()
                .ok_or_else(|| ApiError::conflict(format!("run `{id}` has no open request")))?,
        }
        .id
        .clone();
        let Some(thread) = inner.thread.take() else {
            return Err(ApiError::conflict(format!(
                "run `{id}` is being answered already"
            )));
        };
        inner.status = Some(Status::Running);
        inner.requests.clear();
        Start::Answer {
            request,
            answer,
            thread,
        }
    };
    run.bump();
    spawn(state.clone(), run.clone(), start, slot);
    Ok(())
}

/// Cancels `run` if it is under way or waiting (the runs API and A2A's
/// `CancelTask`); its status after (still running until the cancel lands).
pub(crate) fn cancel_run(run: &Run) -> Result<Status, ApiError> {
    let id = &run.id;
    let status = {
        let mut inner = run.inner();
        match inner.status() {
            // Said under the lock: a stretch ending before the context is
            // cancelled below still ends the run cancelled (`Run::finish`).
            Status::Running => inner.cancelling = true,
            Status::WaitingForInput => {
                inner.status = Some(Status::Cancelled);
                inner.thread = None;
                inner.requests.clear();
            }
            ended => {
                return Err(ApiError::conflict(format!(
                    "run `{id}` is {} already",
                    ended.as_str()
                )));
            }
        }
        inner.status()
    };
    // Outside the lock: cancelling may emit events, which take it.
    if status == Status::Running {
        run.ctx.cancel();
    }
    run.bump();
    Ok(status)
}
