//! Requests from other workers to this one about the runs it runs: a
//! cancel sent through another worker (`POST /runs/{id}/cancel`, A2A
//! `CancelTask`) and a double text's `interrupt`; and those that wait for
//! a reply (`forward.rs`). Taken at each wake-up on
//! the requests' channel, and every [`troupe::store::HEARTBEAT`] should
//! one be missed.

use std::sync::Arc;

use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use troupe::store::{HEARTBEAT, Notice};

use super::super::run_control::cancel_run;
use super::super::say;
use super::super::state::Shared;
use super::Board;

/// Starts taking `board`'s requests for this worker's runs.
pub(super) fn start(state: &Shared, board: Arc<Board>) {
    let state = Arc::downgrade(state);
    let mut notices = board.shared.notices();
    tokio::spawn(async move {
        loop {
            control_or_heartbeat(&mut notices).await;
            let Some(state) = state.upgrade() else {
                return;
            };
            take(&state, &board).await;
        }
    });
}

/// Takes and carries out the requests on this worker's runs under way.
async fn take(state: &Shared, board: &Arc<Board>) {
    let runs: Vec<_> = state
        .runs
        .all()
        .into_iter()
        .filter(|r| !r.inner().status().ended())
        .collect();
    // Requests waiting for a reply: answers, rollbacks (`forward.rs`).
    super::forward::take(state, board, &runs).await;
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let asked = match board.shared.take_controls(&ids).await {
        Ok(a) => a,
        Err(e) => {
            say(&format!(
                "troupe serve: cannot read the other workers' requests: {e}"
            ));
            return;
        }
    };
    for control in asked {
        let Some(run) = runs.iter().find(|r| r.id == control.run_id) else {
            continue;
        };
        match control.action.as_str() {
            "cancel" => {
                // Over meanwhile: nothing to cancel.
                let _ = cancel_run(run);
            }
            "interrupt" => run.ctx.stop_gracefully(),
            other => say(&format!(
                "troupe serve: run `{}`: unknown request `{other}` from another worker",
                run.id
            )),
        }
    }
}

/// Waits for the next request for some worker (a control notice, or a
/// resync after notices were missed), or [`HEARTBEAT`] should one be
/// missed: when to look at the board's requests again.
pub(crate) async fn control_or_heartbeat(notices: &mut Receiver<Notice>) {
    let _ = tokio::time::timeout(HEARTBEAT, async {
        loop {
            match notices.recv().await {
                Ok(Notice::Control | Notice::Resync) | Err(RecvError::Lagged(_)) => return,
                Ok(Notice::Run(_)) => {}
                Err(RecvError::Closed) => std::future::pending::<()>().await,
            }
        }
    })
    .await;
}
