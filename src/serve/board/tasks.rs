//! Every worker's runs as runs of this one, for the listings that show
//! runs with their status rather than as JSON (A2A `ListTasks`): this
//! worker's own runs, the other workers' followed here, and the rest made
//! from their records on the board (status, response, questions; no
//! events). Without a board, this worker's runs alone.

use std::collections::HashSet;
use std::sync::Arc;

use super::super::error::ApiError;
use super::super::run::Run;
use super::super::state::Shared;
use super::{LISTED, mirror, unreachable};

/// Every run of every worker on the teams' boards, newest first.
pub(crate) async fn all_runs(state: &Shared) -> Result<Vec<Arc<Run>>, ApiError> {
    let own = state.runs.all();
    if state.teams.values().all(|t| t.board.is_none()) {
        return Ok(own);
    }
    let mut seen: HashSet<String> = own.iter().map(|r| r.id.clone()).collect();
    let mut all: Vec<(i64, Arc<Run>)> = own.into_iter().map(|r| (r.started_ms(), r)).collect();
    for board in state.teams.values().filter_map(|t| t.board.as_ref()) {
        for record in board.shared.runs(LISTED).await.map_err(unreachable)? {
            if !state.teams.contains_key(&record.team) || !seen.insert(record.id.clone()) {
                continue;
            }
            let run = board
                .mirrors()
                .get(&record.id)
                .cloned()
                .unwrap_or_else(|| mirror::snapshot(&record));
            all.push((record.started_ms, run));
        }
    }
    all.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(all.into_iter().map(|(_, r)| r).collect())
}
