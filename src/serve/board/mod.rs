//! Many workers, one server: with a PostgreSQL store shared by several
//! `troupe serve` processes, each team has a board (`troupe::store::RunBoard`)
//! through which a client sees every worker's runs from any of them.
//!
//! - **Publishing** (`publish.rs`): the worker running a run writes its
//!   events to `troupe_serve_events` (position = the SSE event id) and its
//!   record (status, JSON, webhook) to `troupe_serve_runs`, behind the run:
//!   a task per run wakes when the run logs or changes, and writes
//!   everything new in one transaction, then `NOTIFY`s. A turn never waits
//!   on it; a batch holds every event logged while the previous one was
//!   written.
//! - **Following** (`mirror.rs`): asked for a run it does not run
//!   (`GET /runs/{id}/events`, A2A `SubscribeToTask`, `GetTask`,
//!   `CancelTask`), a worker makes a mirror of it: a run loaded from the
//!   board (events from the start, so `Last-Event-ID` works as on the
//!   worker running it) and kept up to date on each wake-up (and every
//!   two seconds should one be missed), which the same streaming code
//!   follows to the end.
//! - **Listing**: `GET /runs` shows this worker's runs and every other
//!   worker's from the board; `GET /runs/{id}` a run's record.
//! - **Requests** (`controls.rs`): cancelling through another worker asks
//!   the one running the run (a row in `troupe_serve_controls` and a
//!   `NOTIFY`), as a double text's `interrupt` does.
//! - **Forwarded requests** (`forward.rs`, `orphan.rs`): an answer to a
//!   question, or a double text's `rollback`, sent through another worker
//!   reaches the one holding the run, which carries it out and replies;
//!   an answer to a run whose worker died takes the run over.
//! - **Sessions** (`session.rs`): a message to a session whose run is
//!   under way on another worker follows the double-texting policy there.
//! - **Takeover**: a run taken over gets its events so far, its record and
//!   its webhook from the board (`adopted`).
//!
//! A store one process owns has no board: all of this stays in memory.

mod controls;
mod forward;
pub(crate) mod handle;
mod mirror;
mod orphan;
mod publish;
mod session;
mod tasks;

use std::sync::Arc;

use serde_json::Value;

use super::error::ApiError;
use super::run::{Run, summary_of};
use super::say;
use super::state::Shared;
use super::webhook::{self, Webhook};

pub(crate) use controls::control_or_heartbeat;
pub(crate) use forward::{answer, waiting_elsewhere};
pub(crate) use handle::Board;
pub(crate) use session::admit;
pub(crate) use tasks::all_runs;

/// Starts what every board needs: a publisher for each new run, and the
/// loop taking requests for this worker's runs.
pub(crate) fn start(state: &Shared) {
    if state.teams.values().all(|t| t.board.is_none()) {
        return;
    }
    let weak = Arc::downgrade(state);
    state.runs.on_new(move |run| {
        let Some(state) = weak.upgrade() else {
            return;
        };
        if let Some(board) = board_of(&state, &run.team) {
            publish::spawn(board, run.clone());
        }
    });
    for team in state.teams.values() {
        if let Some(board) = &team.board {
            controls::start(state, board.clone());
        }
    }
}

/// Team `team`'s board, if it has one.
pub(crate) fn board_of(state: &Shared, team: &str) -> Option<Arc<Board>> {
    state.teams.get(team).and_then(|t| t.board.clone())
}

/// The run `id`, run here or followed here from another worker (a run
/// found with [`find`]); 404 otherwise.
pub(crate) fn lookup(state: &Shared, id: &str) -> Result<Arc<Run>, ApiError> {
    state.runs.get(id).or_else(|e| {
        state
            .teams
            .values()
            .filter_map(|t| t.board.as_ref())
            .find_map(|b| b.mirrors().get(id).cloned())
            .ok_or(e)
    })
}

/// The run `id`: run here, or another worker's (followed from now on,
/// with its events so far); 404 when no worker has it.
pub(crate) async fn find(state: &Shared, id: &str) -> Result<Arc<Run>, ApiError> {
    let missing = match lookup(state, id) {
        Ok(run) => return Ok(run),
        Err(e) => e,
    };
    for board in state.teams.values().filter_map(|t| t.board.clone()) {
        let record = board.shared.run(id).await.map_err(unreachable)?;
        if let Some(record) = record {
            return mirror::follow(&board, record).await;
        }
    }
    Err(missing)
}

/// `GET /runs/{id}`'s body: this worker's run, else another's record.
pub(crate) async fn detail(state: &Shared, id: &str) -> Result<Value, ApiError> {
    let missing = match lookup(state, id) {
        Ok(run) => return Ok(run.detail()),
        Err(e) => e,
    };
    for board in state.teams.values().filter_map(|t| t.board.as_ref()) {
        if let Some(r) = board.shared.run(id).await.map_err(unreachable)? {
            return Ok(r.detail);
        }
    }
    Err(missing)
}

/// How many records of other workers `GET /runs` shows at most.
const LISTED: u32 = 1000;

/// `GET /runs`'s body: this worker's runs and every other worker's on the
/// boards, newest first.
pub(crate) async fn list(state: &Shared) -> Result<Vec<Value>, ApiError> {
    let mut all: Vec<(i64, Value)> = state
        .runs
        .all()
        .iter()
        .map(|r| (r.started_ms(), r.summary()))
        .collect();
    // Listed once: this worker's own, and those of teams on one database
    // (whose boards share the tables) read through each board.
    let mut seen: std::collections::HashSet<String> =
        state.runs.all().iter().map(|r| r.id.clone()).collect();
    for board in state.teams.values().filter_map(|t| t.board.as_ref()) {
        for r in board.shared.runs(LISTED).await.map_err(unreachable)? {
            if !state.teams.contains_key(&r.team) || !seen.insert(r.id.clone()) {
                continue;
            }
            all.push((r.started_ms, summary_of(&r.detail)));
        }
    }
    all.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(all.into_iter().map(|(_, v)| v).collect())
}

/// Cancels run `id` wherever it runs: here at once; on another worker by
/// asking it. The status after (`running` until the cancel lands).
pub(crate) async fn cancel(state: &Shared, id: &str) -> Result<(String, &'static str), ApiError> {
    let run = find(state, id).await?;
    if state.runs.get(id).is_ok() {
        let status = super::run_control::cancel_run(&run)?;
        return Ok((run.id.clone(), status.as_str()));
    }
    let status = run.inner().status();
    if status.ended() {
        return Err(ApiError::conflict(format!(
            "run `{id}` is {} already",
            status.as_str()
        )));
    }
    let board =
        board_of(state, &run.team).ok_or_else(|| ApiError::not_found(format!("no run `{id}`")))?;
    board
        .shared
        .control(id, "cancel")
        .await
        .map_err(unreachable)?;
    Ok((run.id.clone(), status.as_str()))
}

/// Whether `run` runs on another worker (a mirror).
pub(crate) fn is_remote(run: &Run) -> bool {
    run.inner().remote.is_some()
}

/// A run taken over from another worker (`takeover.rs`): its events so
/// far, what the worker recorded of it, its webhook, and its publisher.
pub(crate) async fn adopted(state: &Shared, run: &Arc<Run>) {
    let Some(board) = board_of(state, &run.team) else {
        return;
    };
    match board.shared.run(&run.id).await {
        Ok(Some(record)) => {
            {
                let mut inner = run.inner();
                inner.origin = Some(record.detail.clone());
                inner.webhook = record.webhook.clone();
            }
            if let Some(hook) = record
                .webhook
                .and_then(|w| serde_json::from_value::<Webhook>(w).ok())
            {
                webhook::watch(run.clone(), hook);
            }
        }
        Ok(None) => {}
        Err(e) => say(&format!(
            "troupe serve: run `{}` taken over without its record: {e}",
            run.id
        )),
    }
    match mirror::load_events(&board, &run.id, 0).await {
        Ok(lines) => run.inner().events.extend_lines(lines),
        Err(e) => say(&format!(
            "troupe serve: run `{}` taken over without its earlier events: {e}",
            run.id
        )),
    }
    publish::spawn(board, run.clone());
}

/// The database could not be read: 503.
fn unreachable(e: troupe::store::StoreError) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        format!("the runs of the other workers: {e}"),
    )
}
