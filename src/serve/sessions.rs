//! Stored conversations: `GET /sessions` and `GET /sessions/{id}`, and the
//! rule for a session id.

use axum::Json;
use axum::extract::{Path, State as Axum};
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::Shared;

/// The longest session id taken.
const MAX_ID: usize = 128;

/// A session id: 1 to 128 of `A-Z a-z 0-9 - _ .`, not starting with `.`.
pub(crate) fn check_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "session id `{id}` is not valid: 1 to {MAX_ID} letters, digits, `-`, `_` or `.`, not starting with `.`"
        )))
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// `GET /sessions`: every team's stored conversations.
pub(crate) async fn list(Axum(state): Axum<Shared>) -> Result<Json<Value>, ApiError> {
    let mut out = Vec::new();
    for team in state.teams.values() {
        let threads = &team.store.threads;
        let ids = threads
            .conversations()
            .await
            .map_err(|e| ApiError::internal(format!("cannot list the sessions: {e}")))?;
        for id in ids {
            let Ok(Some(thread)) = threads.load_thread(&id).await else {
                continue;
            };
            let updated = thread.messages().last().map(|m| rfc3339(m.created_at));
            out.push(json!({
                "id": id,
                "team": team.name,
                "messages": thread.len(),
                "updated_at": updated,
            }));
        }
    }
    Ok(Json(Value::Array(out)))
}

/// `GET /sessions/{id}`: its messages.
pub(crate) async fn show(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_id(&id)?;
    for team in state.teams.values() {
        let thread = team
            .store
            .threads
            .load_thread(&id)
            .await
            .map_err(|e| ApiError::internal(format!("cannot read session `{id}`: {e}")))?;
        if let Some(thread) = thread {
            let messages: Vec<Value> = thread
                .messages()
                .iter()
                .map(|m| {
                    json!({
                        "id": m.id.to_string(),
                        "sender": &*m.source,
                        "content": m.text_content(),
                        "time": rfc3339(m.created_at),
                    })
                })
                .collect();
            return Ok(Json(
                json!({"id": id, "team": team.name, "messages": messages}),
            ));
        }
    }
    Err(ApiError::not_found(format!("no session `{id}`")))
}
