//! Push notifications (A2A v1.0 §4.3, §9.4.7): a task's webhook configs
//! (`Create`/`Get`/`List`/`DeleteTaskPushNotificationConfig`, or one
//! given with the message in `configuration.taskPushNotificationConfig`),
//! and their delivery: each change of the task's state (working, input
//! required, completed…) is POSTed to every config's URL as a
//! `StreamResponse` with a `statusUpdate`, in order, with the config's
//! authentication (`Authorization: {scheme} {credentials}`) and token
//! (`X-A2A-Notification-Token`). A delivery the receiver does not answer
//! with a 2xx is tried again with a growing backoff (`deliver.rs`);
//! each notification carries an id (`X-A2A-Notification-Id`, and
//! `troupe.notification_id` in the event's metadata) that stays the same
//! across its retries, so a receiver can drop duplicates.
//!
//! The configs are kept by task id (a run id, unique within the process)
//! until the task is over and its last notification delivered (or given
//! up), or until deleted; a deleted config gets nothing more.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use troupe::agents::a2a::types::{StreamResponse, TaskState, code};

use super::super::deliver;
use super::super::run::Run;
use super::envelope::{RpcError, params, task_id};
use super::task;

/// How the agent authenticates to the webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Authentication {
    /// The HTTP scheme (`Bearer`, `Basic`…).
    scheme: String,
    /// The credentials (a token for `Bearer`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    credentials: String,
}

/// A task's webhook (`TaskPushNotificationConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Config {
    /// Its id (chosen by the server when the client names none).
    #[serde(default)]
    id: String,
    /// The task.
    #[serde(default)]
    task_id: String,
    /// Where notifications go.
    url: String,
    /// A token sent back with each notification.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    token: String,
    /// How to authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authentication: Option<Authentication>,
}

/// The configs by task id.
static CONFIGS: LazyLock<Mutex<BTreeMap<String, Vec<Config>>>> = LazyLock::new(Mutex::default);

fn configs() -> MutexGuard<'static, BTreeMap<String, Vec<Config>>> {
    CONFIGS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads a config from `raw` for `run`: the URL must be http(s), an
/// authentication must name its scheme.
pub(crate) fn parse(raw: Value, run: &Run) -> Result<Config, RpcError> {
    // 0.3 nests the config under `pushNotificationConfig`.
    let raw = match raw.get("pushNotificationConfig") {
        Some(inner @ Value::Object(_)) => inner.clone(),
        _ => raw,
    };
    let mut config: Config = params(raw)?;
    if !config.task_id.is_empty() && config.task_id != run.id {
        return Err(RpcError::params(format!(
            "`taskId` `{}` is not the task `{}`",
            config.task_id, run.id
        )));
    }
    config.task_id = run.id.clone();
    let url = reqwest::Url::parse(&config.url)
        .map_err(|e| RpcError::params(format!("`url` `{}` is not a URL: {e}", config.url)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(RpcError::params(format!(
            "`url` must be http or https, not `{}`",
            url.scheme()
        )));
    }
    if let Some(a) = &config.authentication
        && a.scheme.trim().is_empty()
    {
        return Err(RpcError::params(
            "`authentication.scheme` must not be empty",
        ));
    }
    if config.id.is_empty() {
        config.id = format!("push-{}", troupe::message::MessageId::new());
    }
    Ok(config)
}

/// Registers a config for `run` (replacing one of the same id) and starts
/// delivering to it; the config as stored.
pub(crate) fn create(run: &Arc<Run>, raw: Value) -> Result<Value, RpcError> {
    let config = parse(raw, run)?;
    start(run, config.clone());
    to_value(&config)
}

/// Registers `config` for `run` and starts delivering to it; one of the
/// same id is replaced (its delivery goes on, to the new config).
pub(crate) fn start(run: &Arc<Run>, config: Config) {
    let id = config.id.clone();
    let new = {
        let mut all = configs();
        let list = all.entry(run.id.clone()).or_default();
        let before = list.len();
        list.retain(|c| c.id != config.id);
        let new = list.len() == before;
        list.push(config);
        new
    };
    if new {
        deliver(run.clone(), id);
    }
}

impl Config {
    /// Its id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

/// Whether task `task` has config `id` here.
pub(crate) fn has(task: &str, id: &str) -> bool {
    find(task, id).is_some()
}

/// The ids of task `task`'s configs here.
pub(crate) fn ids(task: &str) -> Vec<String> {
    configs()
        .get(task)
        .map(|l| l.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default()
}

/// Forgets config `id` of task `task` here (its delivery stops).
pub(crate) fn forget(task: &str, id: &str) {
    if let Some(list) = configs().get_mut(task) {
        list.retain(|c| c.id != id);
    }
}

pub(crate) fn to_value(config: &Config) -> Result<Value, RpcError> {
    serde_json::to_value(config).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
}

fn find(task: &str, id: &str) -> Option<Config> {
    configs()
        .get(task)
        .and_then(|l| l.iter().find(|c| c.id == id).cloned())
}

/// `GetTaskPushNotificationConfig` on `run`.
pub(crate) fn get(run: &Run, raw: &Value) -> Result<Value, RpcError> {
    let id = task_id(raw, "id")?;
    let config = find(&run.id, &id).ok_or_else(|| {
        RpcError::new(
            code::TASK_NOT_FOUND,
            format!("task `{}` has no push notification config `{id}`", run.id),
        )
    })?;
    to_value(&config)
}

/// `ListTaskPushNotificationConfigs` on `run` (one page: they are few).
pub(crate) fn list(run: &Run) -> Result<Value, RpcError> {
    let list = configs().get(&run.id).cloned().unwrap_or_default();
    let configs: Result<Vec<Value>, RpcError> = list.iter().map(to_value).collect();
    Ok(json!({"configs": configs?, "nextPageToken": ""}))
}

/// `DeleteTaskPushNotificationConfig` on `run` (idempotent).
pub(crate) fn delete(run: &Run, raw: &Value) -> Result<Value, RpcError> {
    let id = task_id(raw, "id")?;
    if let Some(list) = configs().get_mut(&run.id) {
        list.retain(|c| c.id != id);
    }
    Ok(json!({}))
}

/// Watches `run` and delivers each change of its task's state to the
/// config `id` while it exists: one task observes, another sends in order.
fn deliver(run: Arc<Run>, id: String) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, Value)>();
    let task_id = run.id.clone();
    let sender_id = id.clone();
    tokio::spawn(async move {
        while let Some((notification, body)) = rx.recv().await {
            let Some(config) = find(&task_id, &sender_id) else {
                return;
            };
            send(&config, &notification, &body).await;
        }
        // The task is over and told: its config goes (the spec keeps one
        // until the task completes), so configs do not pile up.
        let mut all = configs();
        if let Some(list) = all.get_mut(&task_id) {
            list.retain(|c| c.id != sender_id);
            if list.is_empty() {
                all.remove(&task_id);
            }
        }
    });
    tokio::spawn(async move {
        let mut changes = run.watch();
        let mut last: Option<(TaskState, usize)> = None;
        let mut seq = 0u64;
        let mut closed = false;
        loop {
            changes.borrow_and_update();
            let now = {
                let inner = run.inner();
                (task::state(inner.status()), inner.requests.len())
            };
            if last != Some(now) {
                last = Some(now);
                seq += 1;
                let notification = format!("{id}-{seq}");
                let mut update = task::status_update(&run);
                update.metadata = Some(Map::from_iter([(
                    "troupe.notification_id".to_string(),
                    Value::String(notification.clone()),
                )]));
                let body = StreamResponse {
                    status_update: Some(update),
                    ..StreamResponse::default()
                };
                let body = serde_json::to_value(body).unwrap_or(Value::Null);
                if tx.send((notification, body)).is_err() {
                    return;
                }
            }
            if now.0.is_terminal() || closed || find(&run.id, &id).is_none() {
                return;
            }
            // Once the run drops its sender, one last look and done.
            closed = changes.changed().await.is_err();
        }
    });
}

/// Posts one notification with the config's headers (retried with
/// backoff by [`deliver::post`]).
async fn send(config: &Config, notification: &str, body: &Value) {
    let mut headers = vec![
        (
            "Content-Type".to_string(),
            "application/a2a+json".to_string(),
        ),
        (
            "X-A2A-Notification-Id".to_string(),
            notification.to_string(),
        ),
    ];
    if let Some(a) = &config.authentication {
        headers.push((
            "Authorization".to_string(),
            format!("{} {}", a.scheme, a.credentials),
        ));
    }
    if !config.token.is_empty() {
        headers.push(("X-A2A-Notification-Token".to_string(), config.token.clone()));
    }
    let what = format!(
        "push notification {notification} (task {}, config {})",
        config.task_id, config.id
    );
    deliver::post(&config.url, &headers, &body.to_string(), &what).await;
}
