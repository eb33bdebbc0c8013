//! `POST /runs/{id}/fork`: run `id` carried on from one of its checkpoints
//! (in its team's checkpoint store) as a new run, its last message or
//! state values edited first; the run forked from is only read. The new
//! run is a run like any other: followed at `/runs/{new}/events`,
//! answered, cancelled; it says where it came from (`forked_from`).

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use troupe::ForkEdits;
use troupe::store::CheckpointId;

use super::body::JsonBody;
use super::drive::{Start, spawn};
use super::error::ApiError;
use super::state::Shared;

/// `POST /runs/{id}/fork`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkBody {
    /// The checkpoint to carry on from (32 hex digits, as the run's
    /// `checkpoint_saved` events name it).
    checkpoint: String,
    /// New text for the checkpoint's last message.
    #[serde(default)]
    message: Option<String>,
    /// State values to set first: a string is kept as its text, other
    /// JSON as its JSON text.
    #[serde(default)]
    state: Option<Map<String, Value>>,
    /// The team, for a run this server did not start (by default: the
    /// run's own, else the first served).
    #[serde(default)]
    team: Option<String>,
}

/// `POST /runs/{id}/fork`: starts the fork; 201 with its id.
pub(crate) async fn fork(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ForkBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let checkpoint: CheckpointId = body.checkpoint.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "`checkpoint` takes a checkpoint id (32 hex digits, as `checkpoint_saved` events name it), got `{}`",
            body.checkpoint
        ))
    })?;
    let known = state.runs.get(&id).ok();
    let team_name = match (&body.team, &known) {
        (Some(t), _) => Some(t.as_str()),
        (None, Some(run)) => Some(run.team.as_str()),
        (None, None) => None,
    };
    let team = state.team(team_name)?;
    let store = team.store.checkpoints.clone();
    let found = store
        .list(&id)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read run `{id}`: {e}")))?;
    if !found.iter().any(|m| m.id == checkpoint) {
        return Err(ApiError::not_found(if found.is_empty() {
            format!("team `{}` keeps no checkpoints of run `{id}`", team.name)
        } else {
            format!("run `{id}` has no checkpoint `{checkpoint}`")
        }));
    }
    let mut edits = ForkEdits::default();
    if let Some(text) = body.message {
        edits = edits.last_message(text);
    }
    for (key, value) in body.state.unwrap_or_default() {
        let text = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        edits = edits.set_state(key, text);
    }
    let slot = state.limits.run_slot()?;
    let task = known
        .as_ref()
        .map_or_else(|| format!("fork of {id}"), |r| r.task.clone());
    let team_name = team.name.clone();
    let run = state.runs.create(&team_name, &task, None);
    let from = json!({"run_id": id, "checkpoint": checkpoint.to_string()});
    run.inner().forked_from = Some(from.clone());
    spawn(
        state.clone(),
        run.clone(),
        Start::Fork {
            from: id,
            checkpoint,
            edits: Box::new(edits),
        },
        slot,
    );
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": run.id, "status": "running", "team": team_name, "forked_from": from})),
    ))
}
