//! Double texting across workers: a message to a session whose run is
//! under way on another worker follows the policy as it would there —
//! `reject`: 409; `enqueue`: the new run starts once that run has ended;
//! `interrupt`: that worker is asked to stop it gracefully, then the same;
//! `rollback`: that worker is asked to cancel it and put the session back
//! as it was before it (it alone knows how it was), and replies once it
//! did (`forward.rs`); then the new run starts. The newest run of the
//! session goes first, whichever worker runs it, so a session's messages
//! run one after the other in the order they came in (by start time,
//! claimed under the session's lock).
//!
//! A run is recorded on the board before its start is answered (with its
//! session claimed, for a session's run), so any worker finds it from
//! then on. Admission is checked in the database under a lock on the session (a
//! transaction-level advisory lock): of two messages reaching two workers
//! at once, one sees the other's run. The worker running a run is the one
//! whose record says so, while its heartbeat is fresh.

use std::sync::Arc;

use troupe::config::DoubleTexting;
use troupe::store::BoardRun;

use super::super::error::ApiError;
use super::super::run::Run;
use super::super::state::Shared;
use super::super::texting::{self, Turn};
use super::{board_of, mirror, unreachable};

/// [`texting::admit`] across the workers on `team`'s board (without a
/// board or a session: `texting::admit` as it is).
pub(crate) async fn admit(
    state: &Shared,
    team: &str,
    session: Option<&str>,
    asked: Option<DoubleTexting>,
    create: impl FnOnce() -> Arc<Run>,
) -> Result<(Arc<Run>, Turn), ApiError> {
    let Some(board) = board_of(state, team) else {
        return texting::admit(state, team, session, asked, create);
    };
    // Boxed: what it awaits (the database) takes ~2.3 KiB, which the
    // handler awaiting this would otherwise hold for as long as its run
    // goes, with or without a board.
    Box::pin(admit_on_board(state, board, team, session, asked, create)).await
}

/// [`admit`] on `board`.
async fn admit_on_board(
    state: &Shared,
    board: Arc<super::Board>,
    team: &str,
    session: Option<&str>,
    asked: Option<DoubleTexting>,
    create: impl FnOnce() -> Arc<Run>,
) -> Result<(Arc<Run>, Turn), ApiError> {
    let Some(id) = session else {
        // Recorded before its start is answered: any worker asked for the
        // run from then on finds it.
        let (run, turn) = texting::admit(state, team, None, asked, create)?;
        if let Err(e) = board
            .shared
            .publish(&run.id, Some(&board.record(&run)), 0, &[])
            .await
        {
            run.finish(Err(format!("not started: {e}")));
            return Err(unreachable(e));
        }
        return Ok((run, turn));
    };
    let policy = texting::policy(state, team, asked);
    let elsewhere = board
        .shared
        .running_elsewhere(team, id)
        .await
        .map_err(unreachable)?;
    if let Some(other) = &elsewhere {
        refuse(policy, id, other)?;
    }
    let (run, mut turn) = texting::admit(state, team, session, asked, create)?;
    let claimed = board.shared.claim_session(&board.record(&run)).await;
    let other = match claimed {
        Ok(None) => elsewhere,
        Ok(Some(other)) => Some(other),
        Err(e) => {
            run.finish(Err(format!("not started: {e}")));
            return Err(unreachable(e));
        }
    };
    let Some(other) = other else {
        return Ok((run, turn));
    };
    if let Err(e) = refuse(policy, id, &other) {
        // Lost a race with a message through another worker.
        run.finish(Err(e.message.clone()));
        return Err(e);
    }
    if turn
        .prior_started_ms()
        .is_some_and(|ms| ms >= other.started_ms)
    {
        // This worker's own run of the session is the newest: it goes
        // first (and follows the other worker's, should it be older).
        return Ok((run, turn));
    }
    // The newest run of the session, on another worker, goes first: the
    // session's runs go one after the other in the order they came in.
    match policy {
        DoubleTexting::Interrupt => {
            board
                .shared
                .control(&other.id, "interrupt")
                .await
                .map_err(unreachable)?;
        }
        DoubleTexting::Rollback => {
            if let Err(e) = super::forward::rollback(&board, &other.id).await {
                run.finish(Err(format!("not started: {}", e.message)));
                return Err(e);
            }
        }
        DoubleTexting::Enqueue | DoubleTexting::Reject => {}
    }
    let prior = mirror::follow(&board, other).await?;
    turn.follow(prior, policy);
    Ok((run, turn))
}

/// 409 when `policy` does not let a message in while `other` is under way
/// on another worker.
fn refuse(policy: DoubleTexting, session: &str, other: &BoardRun) -> Result<(), ApiError> {
    match policy {
        DoubleTexting::Reject => Err(ApiError::conflict(format!(
            "session `{session}` has run `{}` under way on another worker (double_texting: reject); send again when it ends, or ask for enqueue, interrupt or rollback",
            other.id
        ))),
        DoubleTexting::Enqueue | DoubleTexting::Interrupt | DoubleTexting::Rollback => Ok(()),
    }
}
