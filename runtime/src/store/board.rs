//! [`RunBoard`]: what several `troupe serve` workers on one database share
//! so that a client sees them as one server — each run's record (team,
//! session, status, its JSON as `GET /runs/{id}` shows it, its webhook),
//! its events in order, the workers' heartbeats and requests to the worker
//! running a run (cancel, interrupt). A store one process owns needs none
//! of this: the server keeps its runs in memory. The PostgreSQL store's
//! board is `PostgresBoard` (feature `postgres`).
//!
//! The board is written behind the run: the worker running a run appends
//! its events in batches (all the events logged since the last write, in
//! one statement) and the record when its status changes; then it wakes
//! the other workers (a notification naming the run). Readers load the
//! record first and the events after it, so a record seen over comes with
//! every event before it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::broadcast;

use super::error::StoreError;

/// A run's record on the board.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardRun {
    /// The run's id.
    pub id: String,
    /// Its team.
    pub team: String,
    /// The session it is a turn of, if any.
    pub session: Option<String>,
    /// The worker running it (see [`RunBoard::worker`]).
    pub worker: String,
    /// Its status as the server spells it (`running`, `completed`, …).
    pub status: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    /// Its JSON, as `GET /runs/{id}` shows it.
    pub detail: Value,
    /// Where its completion is POSTed, if anywhere (`{url, headers}`).
    pub webhook: Option<Value>,
    /// Whether the worker running it is alive (its heartbeat is fresh).
    pub alive: bool,
}

/// What wakes a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Run `0` has new events or a new status.
    Run(String),
    /// A worker was asked to do something to a run it may run.
    Control,
    /// The wake-ups may have been missed (the listening connection was
    /// made again): look at everything followed.
    Resync,
}

/// A request to the worker running a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// The run.
    pub run_id: String,
    /// What to do: `cancel`, `interrupt` or `rollback`.
    pub action: String,
}

/// A request to the worker holding a run that waits for its reply (an
/// answer to a question, a rollback), sent through another worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The request's id (the asker waits for its reply under it).
    pub id: i64,
    /// The run.
    pub run_id: String,
    /// What is asked: `answer` or `rollback`.
    pub kind: String,
    /// Its details (for an answer: the request id and the text).
    pub payload: Value,
}

/// Where a request ([`Ask`]) stands, as its asker sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum AskState {
    /// No worker took it yet.
    Waiting,
    /// A worker took it and has not replied yet.
    Taken,
    /// The reply.
    Replied(Value),
    /// Gone (withdrawn or pruned).
    Gone,
}

/// The shared record of the runs of several servers on one database.
#[async_trait]
pub trait RunBoard: Send + Sync + std::fmt::Debug {
    /// This worker's id (host, process and a random part).
    fn worker(&self) -> &str;

    /// Wake-ups: runs changed, controls asked, or a resync.
    fn notices(&self) -> broadcast::Receiver<Notice>;

    /// Writes `run`'s record (when `Some`) and its events `events`, the
    /// first at position `first`, in one transaction (events already
    /// written are left as they are), then wakes the other workers.
    async fn publish(
        &self,
        run_id: &str,
        record: Option<&BoardRun>,
        first: u64,
        events: &[Arc<str>],
    ) -> Result<(), StoreError>;

    /// Run `run_id`'s events from position `from` on, in order (at most
    /// `limit`).
    async fn events(
        &self,
        run_id: &str,
        from: u64,
        limit: u32,
    ) -> Result<Vec<(u64, String)>, StoreError>;

    /// Run `run_id`'s record, if any.
    async fn run(&self, run_id: &str) -> Result<Option<BoardRun>, StoreError>;

    /// The newest `limit` records, newest first.
    async fn runs(&self, limit: u32) -> Result<Vec<BoardRun>, StoreError>;

    /// Claims session `session` of `team` for `record` (written as it is):
    /// under a lock on the session, a run of it `running` on another live
    /// worker is returned and nothing is written; otherwise the record is
    /// written and `None` returned.
    async fn claim_session(&self, record: &BoardRun) -> Result<Option<BoardRun>, StoreError>;

    /// The run of `team`'s `session` running on another live worker, if
    /// any.
    async fn running_elsewhere(
        &self,
        team: &str,
        session: &str,
    ) -> Result<Option<BoardRun>, StoreError>;

    /// Asks the worker running `run_id` to `action` it (and wakes it).
    async fn control(&self, run_id: &str, action: &str) -> Result<(), StoreError>;

    /// Takes (deletes and returns) the requests on the runs `run_ids`.
    async fn take_controls(&self, run_ids: &[String]) -> Result<Vec<Control>, StoreError>;

    /// Asks the worker holding `run_id` to do `kind` with `payload`, and
    /// wakes it; the request's id, to wait for its reply
    /// ([`RunBoard::ask_state`]).
    async fn ask(&self, run_id: &str, kind: &str, payload: &Value) -> Result<i64, StoreError>;

    /// Takes the requests not taken yet on the runs `run_ids` (each is
    /// taken by one worker), oldest first.
    async fn take_asks(&self, run_ids: &[String]) -> Result<Vec<Ask>, StoreError>;

    /// Writes the reply to request `id` (of run `run_id`) and wakes its
    /// asker.
    async fn reply(&self, id: i64, run_id: &str, reply: &Value) -> Result<(), StoreError>;

    /// Where request `id` stands.
    async fn ask_state(&self, id: i64) -> Result<AskState, StoreError>;

    /// Withdraws request `id` unless a worker took it already; whether it
    /// was withdrawn.
    async fn withdraw(&self, id: i64) -> Result<bool, StoreError>;

    /// The A2A push notification configs of the tasks `task_ids`, as
    /// (task id, config).
    async fn push_configs(&self, task_ids: &[String]) -> Result<Vec<(String, Value)>, StoreError>;

    /// Stores config `config_id` of task `task_id` (replacing one of that
    /// id) and wakes the workers.
    async fn save_push(
        &self,
        task_id: &str,
        config_id: &str,
        config: &Value,
    ) -> Result<(), StoreError>;

    /// Deletes config `config_id` of task `task_id` and wakes the workers.
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), StoreError>;

    /// Renews this worker's heartbeat.
    async fn beat(&self) -> Result<(), StoreError>;

    /// Deletes the records (with their events) of runs over, or left by a
    /// dead worker, last written more than `age` ago; the schedule ticks
    /// claimed more than `age` ago; requests older than `age`. Returns
    /// (records, ticks) deleted.
    async fn prune(&self, age: std::time::Duration) -> Result<(u64, u64), StoreError>;
}
