//! `ListTasks`: the team's tasks (the runs the server keeps, and every
//! other worker's on a shared database), newest
//! first, filtered by `contextId` and `status`, a page at a time
//! (`pageSize` 1 to 100, 50 when unset; `pageToken` the opaque token of
//! the previous page), with `nextPageToken` (empty on the last page) and
//! `totalSize` (every task matching, before paging). Tasks carry their
//! artifacts only with `includeArtifacts: true`, and at most
//! `historyLength` messages of history. `statusTimestampAfter` is refused
//! (`UnsupportedOperationError`): runs keep no status times.

use std::sync::Arc;

use serde_json::{Value, json};
use troupe::agents::a2a::types::{TaskState, code};

use super::super::run::Run;
use super::envelope::{RpcError, history_length};
use super::task;

/// The page size when the caller names none.
const DEFAULT_PAGE: usize = 50;
/// The largest page.
const MAX_PAGE: usize = 100;
/// The prefix of a page token (the rest is the id of the page's first task).
const TOKEN_PREFIX: &str = "after:";

/// `ListTasks` on `team` (every team's tasks when `None`).
pub(crate) fn list(
    runs: Vec<Arc<Run>>,
    team: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let history = history_length(params)?;
    // Runs keep no status times: a filter on them is refused, not ignored.
    if params
        .get("statusTimestampAfter")
        .is_some_and(|v| !v.is_null())
    {
        return Err(RpcError::new(
            code::UNSUPPORTED_OPERATION,
            "`statusTimestampAfter` is not supported: filter by `status` or `contextId`",
        ));
    }
    let context = match params.get("contextId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(RpcError::params("`contextId` must be a string")),
    };
    let status = match params.get("status") {
        None | Some(Value::Null) => None,
        Some(v) => match serde_json::from_value::<TaskState>(v.clone()) {
            Ok(TaskState::Unspecified) => None,
            Ok(s) => Some(s),
            Err(_) => {
                return Err(RpcError::params(format!(
                    "`status` must be a task state such as TASK_STATE_WORKING (got {v})"
                )));
            }
        },
    };
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => DEFAULT_PAGE,
        Some(v) => match v.as_i64() {
            Some(n) if (1..=MAX_PAGE as i64).contains(&n) => usize::try_from(n).unwrap_or(1),
            _ => {
                return Err(RpcError::params(format!(
                    "`pageSize` must be an integer from 1 to {MAX_PAGE} (got {v})"
                )));
            }
        },
    };
    let include_artifacts = match params.get("includeArtifacts") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(RpcError::params(format!(
                "`includeArtifacts` must be a boolean (got {v})"
            )));
        }
    };
    let after = match params.get("pageToken") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => match s.strip_prefix(TOKEN_PREFIX) {
            Some(id) => Some(id.to_string()),
            None => {
                return Err(RpcError::params(format!(
                    "`pageToken` `{s}` is not one this agent gave"
                )));
            }
        },
        Some(_) => return Err(RpcError::params("`pageToken` must be a string")),
    };

    let matching: Vec<_> = runs
        .into_iter()
        .filter(|r| team.is_none_or(|t| t == r.team))
        .filter(|r| {
            context
                .as_deref()
                .is_none_or(|c| r.session.as_deref() == Some(c))
        })
        .filter(|r| status.is_none_or(|s| task::state(r.inner().status()) == s))
        .collect();
    let start = match &after {
        None => 0,
        Some(id) => match matching.iter().position(|r| &r.id == id) {
            Some(at) => at + 1,
            None => {
                return Err(RpcError::params(format!(
                    "`pageToken` names task `{id}`, which is gone or does not match the filters"
                )));
            }
        },
    };
    let page: Vec<_> = matching.iter().skip(start).take(page_size).collect();
    let next = if start + page.len() < matching.len() {
        page.last()
            .map(|r| format!("{TOKEN_PREFIX}{}", r.id))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let tasks: Vec<Value> = page
        .iter()
        .map(|r| {
            let mut t = task::task(r, history);
            if !include_artifacts {
                t.artifacts.clear();
            }
            serde_json::to_value(t).unwrap_or(Value::Null)
        })
        .collect();
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": next,
        "pageSize": page_size,
        "totalSize": matching.len(),
    }))
}
