//! The runs API: a registry of the runs started since the server started,
//! each with its status, its result and the log of its events, and the
//! routes that start, list, show, answer and cancel them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::{Path, State as Axum};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, watch};
use troupe::{
    EventOutput, EventRecord, EventSink, InputRequest, JsonLines, RunContext, RunResult, RunStatus,
    Thread, Workflow,
};

use super::app::Shared;
use super::body::JsonBody;
use super::error::ApiError;
use super::sessions::check_id;

/// How many finished runs are kept (the oldest go first).
const KEPT: usize = 1000;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Under way.
    Running,
    /// Ended asking questions (`requests`); an answer runs it on.
    WaitingForInput,
    /// Done: nothing left to do.
    Completed,
    /// Its stop condition held.
    Stopped,
    /// It failed (`error` says why).
    Failed,
    /// Cancelled (`POST /runs/{id}/cancel`).
    Cancelled,
    /// Stopped gracefully when the server shut down (checkpointed when the
    /// config has a store).
    Interrupted,
}

impl Status {
    /// As JSON shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::WaitingForInput => "waiting_for_input",
            Status::Completed => "completed",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Interrupted => "interrupted",
        }
    }

    /// Whether the run is over for good (not running, not waiting).
    pub(crate) fn ended(self) -> bool {
        !matches!(self, Status::Running | Status::WaitingForInput)
    }
}

/// One run.
pub(crate) struct Run {
    /// Its id (`run-<millis>-<n>`), also the engine's run id (checkpoints).
    pub(crate) id: String,
    /// The team it runs.
    pub(crate) team: String,
    /// The task (the user's message).
    pub(crate) task: String,
    /// The stored conversation it is a turn of, if any.
    pub(crate) session: Option<String>,
    started_at: SystemTime,
    /// Its context: events into its log; cancel and stop through it.
    pub(crate) ctx: RunContext,
    inner: Mutex<Inner>,
    /// Bumped whenever an event is logged or the status changes.
    changed: watch::Sender<u64>,
}

/// What changes as a run goes.
#[derive(Default)]
pub(crate) struct Inner {
    /// Where it stands (`None`: running).
    pub(crate) status: Option<Status>,
    /// The final response of its last stretch.
    pub(crate) response: Option<String>,
    /// The tokens it spent.
    pub(crate) usage: Option<troupe::Usage>,
    /// Why it failed.
    pub(crate) error: Option<String>,
    /// The questions it waits on.
    pub(crate) requests: Vec<InputRequest>,
    /// The thread of a run waiting for input, to answer it in.
    thread: Option<Thread>,
    /// Every event so far, each as one line of `--events jsonl`.
    pub(crate) events: Vec<Arc<str>>,
}

impl Inner {
    /// The status (a run is running until told otherwise).
    pub(crate) fn status(&self) -> Status {
        self.status.unwrap_or(Status::Running)
    }
}

impl Run {
    fn new(id: String, team: String, task: String, session: Option<String>) -> Arc<Run> {
        Arc::new_cyclic(|me: &Weak<Run>| {
            let me = me.clone();
            // Weak: the run owns its context, whose sink must not own the run.
            let sink = EventSink::callback(move |record| {
                if let Some(run) = me.upgrade() {
                    run.log(record);
                }
            });
            Run {
                ctx: RunContext::with_sink(sink).with_run_id(id.as_str()),
                id,
                team,
                task,
                session,
                started_at: SystemTime::now(),
                inner: Mutex::default(),
                changed: watch::Sender::new(0),
            }
        })
    }

    /// Its changing part, locked (briefly: never across an await).
    pub(crate) fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver woken at every change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Logs an event as `troupe run --events jsonl` writes it.
    fn log(&self, record: &EventRecord) {
        let mut out = JsonLines::new(Vec::new());
        if out.write(record).is_err() {
            return;
        }
        let mut bytes = out.into_inner();
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        let line: Arc<str> = String::from_utf8_lossy(&bytes).into();
        self.inner().events.push(line);
        self.bump();
    }

    /// Records how a stretch of the run ended.
    fn finish(&self, result: Result<RunResult, String>) {
        {
            let mut inner = self.inner();
            match result {
                Ok(r) => {
                    let pending = Workflow::pending_requests(&r.thread);
                    inner.usage = Some(r.usage);
                    inner.response = Some(r.final_text());
                    if pending.is_empty() {
                        inner.status = Some(match r.status {
                            RunStatus::Completed => Status::Completed,
                            RunStatus::Stopped(_) => Status::Stopped,
                            RunStatus::Cancelled => Status::Cancelled,
                            RunStatus::Interrupted => Status::Interrupted,
                            RunStatus::WaitingForInput(_) => Status::WaitingForInput,
                        });
                    } else {
                        inner.status = Some(Status::WaitingForInput);
                        inner.requests = pending;
                        inner.thread = Some(r.thread);
                    }
                }
                Err(e) => {
                    inner.status = Some(Status::Failed);
                    inner.error = Some(troupe::secrets::redact(&e).into_owned());
                }
            }
        }
        self.bump();
    }

    /// Ends a run waiting for input, at shutdown (its thread goes; a
    /// checkpoint, if the config has a store, keeps it).
    pub(crate) fn interrupt(&self) {
        {
            let mut inner = self.inner();
            inner.status = Some(Status::Interrupted);
            inner.thread = None;
        }
        self.bump();
    }

    /// `GET /runs` shows this.
    fn summary(&self) -> Value {
        json!({
            "id": self.id,
            "team": self.team,
            "status": self.inner().status().as_str(),
            "task": self.task,
            "session": self.session,
            "started_at": humantime::format_rfc3339_millis(self.started_at).to_string(),
        })
    }

    /// `GET /runs/{id}` shows this (and the SSE stream's `end` event).
    pub(crate) fn detail(&self) -> Value {
        let inner = self.inner();
        json!({
            "id": self.id,
            "team": self.team,
            "status": inner.status().as_str(),
            "task": self.task,
            "session": self.session,
            "started_at": humantime::format_rfc3339_millis(self.started_at).to_string(),
            "response": inner.response,
            "usage": inner.usage.map(usage_json),
            "error": inner.error,
            "requests": inner.requests.iter().map(|q| json!({
                "id": q.id, "agent": q.agent, "question": q.prompt,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Usage as OpenAI shows it.
pub(crate) fn usage_json(u: troupe::Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total(),
    })
}

/// The runs, by id and in the order they started.
#[derive(Default)]
pub(crate) struct Registry {
    runs: Mutex<Table>,
    counter: AtomicU64,
}

/// The runs by id, and their ids oldest first.
#[derive(Default)]
struct Table {
    map: BTreeMap<String, Arc<Run>>,
    order: VecDeque<String>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new run, registered (the oldest finished runs beyond [`KEPT`] go).
    pub(crate) fn create(&self, team: &str, task: &str, session: Option<String>) -> Arc<Run> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let id = format!("run-{millis}-{n}");
        let run = Run::new(id.clone(), team.to_string(), task.to_string(), session);
        let mut guard = self.lock();
        let Table { map, order } = &mut *guard;
        map.insert(id.clone(), run.clone());
        order.push_back(id);
        if order.len() > KEPT {
            let ended: Vec<String> = order
                .iter()
                .filter(|id| map.get(*id).is_some_and(|r| r.inner().status().ended()))
                .take(order.len() - KEPT)
                .cloned()
                .collect();
            for id in ended {
                map.remove(&id);
                order.retain(|o| *o != id);
            }
        }
        run
    }

    /// The run `id`, or 404.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Run>, ApiError> {
        self.lock()
            .map
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no run `{id}`")))
    }

    /// Every run, newest first.
    pub(crate) fn all(&self) -> Vec<Arc<Run>> {
        let guard = self.lock();
        guard
            .order
            .iter()
            .rev()
            .filter_map(|id| guard.map.get(id).cloned())
            .collect()
    }
}

/// What a stretch of a run starts from.
pub(crate) enum Start {
    /// A thread (the task, or the messages an OpenAI client sent).
    Thread(Thread),
    /// The next user turn of the run's session.
    Session(String),
    /// An answer to request `request` in the thread of a run waiting.
    Answer {
        /// The request's id.
        request: String,
        /// The answer.
        answer: String,
        /// The thread the run ended waiting with.
        thread: Thread,
    },
}

/// Runs a stretch of `run` in the background, holding a run slot.
pub(crate) fn spawn(state: Shared, run: Arc<Run>, start: Start, slot: OwnedSemaphorePermit) {
    tokio::spawn(async move {
        let result = drive(&state, &run, start).await;
        run.finish(result);
        drop(slot);
    });
}

async fn drive(state: &Shared, run: &Run, start: Start) -> Result<RunResult, String> {
    let team = state.team(Some(&run.team)).map_err(|e| e.message)?;
    let workflow = &team.built.workflow;
    match (start, &run.session) {
        (Start::Thread(thread), _) => workflow
            .run(thread, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (Start::Session(text), Some(id)) => {
            // A session whose last turn asked a question: this message is
            // the answer (the oldest question open), as a chat user gives it.
            let stored = team
                .store
                .threads
                .load_thread(id)
                .await
                .map_err(|e| format!("cannot read session `{id}`: {e}"))?;
            let asked = stored
                .as_ref()
                .and_then(|t| Workflow::pending_requests(t).into_iter().next());
            match (stored, asked) {
                (Some(thread), Some(q)) => {
                    let r = workflow
                        .respond_in_thread(thread, &q.id, text, &run.ctx)
                        .await
                        .map_err(|e| e.to_string())?;
                    save(team, id, &r.thread).await?;
                    Ok(r)
                }
                _ => team
                    .session
                    .clone()
                    .with_context(run.ctx.clone())
                    .send(id, text)
                    .await
                    .map_err(|e| e.to_string()),
            }
        }
        (Start::Session(text), None) => workflow
            .run_task(text, &run.ctx)
            .await
            .map_err(|e| e.to_string()),
        (
            Start::Answer {
                request,
                answer,
                thread,
            },
            session,
        ) => {
            let r = workflow
                .respond_in_thread(thread, &request, answer, &run.ctx)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(id) = session {
                save(team, id, &r.thread).await?;
            }
            Ok(r)
        }
    }
}

/// Saves the thread an answer ran on as session `id`.
async fn save(team: &super::team::Team, id: &str, thread: &Thread) -> Result<(), String> {
    team.store
        .threads
        .save_thread(id, thread)
        .await
        .map_err(|e| format!("the answer ran but session `{id}` was not saved: {e}"))
}

/// `POST /runs`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartBody {
    task: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    team: Option<String>,
}

/// `POST /runs`: starts a run; 201.
pub(crate) async fn start(
    Axum(state): Axum<Shared>,
    JsonBody(body): JsonBody<StartBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.task.trim().is_empty() {
        return Err(ApiError::bad_request("`task` is empty".into()));
    }
    if let Some(s) = &body.session {
        check_id(s)?;
    }
    let team = state.team(body.team.as_deref())?.name.clone();
    let slot = state.limits.run_slot()?;
    let run = state.runs.create(&team, &body.task, body.session.clone());
    let start = match &body.session {
        Some(_) => Start::Session(body.task),
        None => Start::Thread(Thread::from_messages([troupe::Message::user(body.task)])),
    };
    spawn(state.clone(), run.clone(), start, slot);
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": run.id, "status": "running", "session": run.session, "team": team})),
    ))
}

/// `GET /runs`: newest first.
pub(crate) async fn list(Axum(state): Axum<Shared>) -> Json<Value> {
    Json(Value::Array(
        state.runs.all().iter().map(|r| r.summary()).collect(),
    ))
}

/// `GET /runs/{id}`.
pub(crate) async fn status(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.runs.get(&id)?.detail()))
}

/// `POST /runs/{id}/input`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputBody {
    #[serde(default)]
    request_id: Option<String>,
    answer: String,
}

/// `POST /runs/{id}/input`: answers an open request (the oldest when none
/// is named) and runs on; 202.
pub(crate) async fn input(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<InputBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let run = state.runs.get(&id)?;
    answer(&state, &run, body.request_id.as_deref(), body.answer)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": run.id, "status": "running"})),
    ))
}

/// Answers an open request of `run` (the oldest when none is named) and
/// runs it on in the background (the runs API and A2A follow-ups).
pub(crate) fn answer(
    state: &Shared,
    run: &Arc<Run>,
    request_id: Option<&str>,
    answer: String,
) -> Result<(), ApiError> {
    let id = &run.id;
    let slot = state.limits.run_slot()?;
    let start = {
        let mut inner = run.inner();
        if inner.status() != Status::WaitingForInput {
            return Err(ApiError::conflict(format!(
                "run `{id}` is {}, not waiting for input",
                inner.status().as_str()
            )));
        }
        let request = match request_id {
            Some(r) => inner.requests.iter().find(|q| q.id == r).ok_or_else(|| {
                ApiError::not_found(format!(
                    "run `{id}` has no open request `{r}`; open: {}",
                    inner
                        .requests
                        .iter()
                        .map(|q| q.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
            None => inner
                .requests
                .first()
                .ok_or_else(|| ApiError::conflict(format!("run `{id}` has no open request")))?,
        }
        .id
        .clone();
        let Some(thread) = inner.thread.take() else {
            return Err(ApiError::conflict(format!(
                "run `{id}` is being answered already"
            )));
        };
        inner.status = Some(Status::Running);
        inner.requests.clear();
        Start::Answer {
            request,
            answer,
            thread,
        }
    };
    run.bump();
    spawn(state.clone(), run.clone(), start, slot);
    Ok(())
}

/// `POST /runs/{id}/cancel`: cancels a run under way or waiting; 202.
pub(crate) async fn cancel(
    Axum(state): Axum<Shared>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let run = state.runs.get(&id)?;
    let status = cancel_run(&run)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": run.id, "status": status.as_str()})),
    ))
}

/// Cancels `run` if it is under way or waiting (the runs API and A2A's
/// `CancelTask`); its status after (still running until the cancel lands).
pub(crate) fn cancel_run(run: &Run) -> Result<Status, ApiError> {
    let id = &run.id;
    let status = {
        let mut inner = run.inner();
        match inner.status() {
            Status::Running => {}
            Status::WaitingForInput => {
                inner.status = Some(Status::Cancelled);
                inner.thread = None;
                inner.requests.clear();
            }
            ended => {
                return Err(ApiError::conflict(format!(
                    "run `{id}` is {} already",
                    ended.as_str()
                )));
            }
        }
        inner.status()
    };
    // Outside the lock: cancelling may emit events, which take it.
    if status == Status::Running {
        run.ctx.cancel();
    }
    run.bump();
    Ok(status)
}
