//! Push notification configs on a database shared by several workers:
//! kept in the database (`troupe_serve_push`) so that any worker creates,
//! reads, lists and deletes a task's configs, and the worker holding the
//! task — the one running it, or the one that took it over — delivers
//! them. Each worker loads the configs of the runs it holds at each
//! wake-up on the requests' channel (a change to a config wakes it) and
//! every [`HEARTBEAT`]: new ones start delivering, deleted ones stop.
//! Without a shared database, `push.rs` keeps them in memory as it is.

use std::sync::Arc;

use serde_json::{Value, json};
use troupe::agents::a2a::types::code;

use super::super::board::{self, Board};
use super::super::run::Run;
use super::super::say;
use super::super::state::Shared;
use super::envelope::{RpcError, task_id};
use super::{PUSH_CREATE, PUSH_GET, PUSH_LIST, push};

/// A push config method on `run` of a team on `board`.
pub(crate) async fn method(
    board: &Board,
    run: &Arc<Run>,
    method: &str,
    raw: Value,
) -> Result<Value, RpcError> {
    match method {
        PUSH_CREATE => create(board, run, raw).await,
        PUSH_GET => {
            let id = task_id(&raw, "id")?;
            stored(board, &run.id)
                .await?
                .into_iter()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .ok_or_else(|| {
                    RpcError::new(
                        code::TASK_NOT_FOUND,
                        format!("task `{}` has no push notification config `{id}`", run.id),
                    )
                })
        }
        PUSH_LIST => Ok(json!({"configs": stored(board, &run.id).await?, "nextPageToken": ""})),
        _ => {
            let id = task_id(&raw, "id")?;
            board
                .shared
                .delete_push(&run.id, &id)
                .await
                .map_err(failed)?;
            push::forget(&run.id, &id);
            Ok(json!({}))
        }
    }
}

/// Stores a config for `run` (any worker's); this worker delivers it at
/// once when it holds the run, else the worker holding it does once
/// woken.
pub(crate) async fn create(board: &Board, run: &Arc<Run>, raw: Value) -> Result<Value, RpcError> {
    let config = push::parse(raw, run)?;
    let value = push::to_value(&config)?;
    board
        .shared
        .save_push(&run.id, config.id(), &value)
        .await
        .map_err(failed)?;
    if !board::is_remote(run) {
        push::start(run, config);
    }
    Ok(value)
}

/// Task `task`'s configs as stored.
async fn stored(board: &Board, task: &str) -> Result<Vec<Value>, RpcError> {
    let all = board
        .shared
        .push_configs(&[task.to_string()])
        .await
        .map_err(failed)?;
    Ok(all.into_iter().map(|(_, c)| c).collect())
}

/// The database could not be read or written.
fn failed(e: troupe::store::StoreError) -> RpcError {
    RpcError::new(
        code::INTERNAL_ERROR,
        format!("push notification configs: {e}"),
    )
}

/// Starts, for each team on a shared database, loading the configs of
/// the runs this worker holds.
pub(crate) fn start(state: &Shared) {
    for team in state.teams.values() {
        let Some(board) = team.board.clone() else {
            continue;
        };
        let (name, weak) = (team.name.clone(), Arc::downgrade(state));
        let mut notices = board.shared.notices();
        tokio::spawn(async move {
            loop {
                board::control_or_heartbeat(&mut notices).await;
                let Some(state) = weak.upgrade() else {
                    return;
                };
                load(&state, &board, &name).await;
            }
        });
    }
}

/// Brings the configs of team `team`'s runs held here in line with the
/// database.
async fn load(state: &Shared, board: &Board, team: &str) {
    let runs: Vec<Arc<Run>> = state
        .runs
        .all()
        .into_iter()
        .filter(|r| r.team == team && !r.inner().status().ended())
        .collect();
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let stored = match board.shared.push_configs(&ids).await {
        Ok(s) => s,
        Err(e) => {
            say(&format!(
                "troupe serve: cannot read the tasks' push notification configs: {e}"
            ));
            return;
        }
    };
    for run in &runs {
        let mine: Vec<&Value> = stored
            .iter()
            .filter(|(t, _)| *t == run.id)
            .map(|(_, c)| c)
            .collect();
        for raw in &mine {
            let Ok(config) = push::parse((*raw).clone(), run) else {
                continue;
            };
            if !push::has(&run.id, config.id()) {
                push::start(run, config);
            }
        }
        for id in push::ids(&run.id) {
            let kept = mine
                .iter()
                .any(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()));
            if !kept {
                push::forget(&run.id, &id);
            }
        }
    }
}
