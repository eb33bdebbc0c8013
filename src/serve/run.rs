//! One run the server started: its status, its result and the log of its
//! events, which SSE readers follow.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio::sync::watch;
use troupe::{
    InputRequest, RunContext, RunResult, RunStatus, Thread, Workflow, event::EventRecord,
    sink::EventSink,
};

use super::event_log::EventLog;

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

    /// The status [`Status::as_str`] spells `text`.
    pub(crate) fn parse(text: &str) -> Option<Status> {
        [
            Status::Running,
            Status::WaitingForInput,
            Status::Completed,
            Status::Stopped,
            Status::Failed,
            Status::Cancelled,
            Status::Interrupted,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
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
    /// Bumped whenever something but an event changes (the status): what
    /// waiting for the run's end watches, not woken by every event.
    moved: watch::Sender<u64>,
    /// Where it says it ended (the registry, which weighs its record).
    ended_to: OnceLock<Ended>,
}

/// What changes as a run goes.
#[derive(Default)]
pub(crate) struct Inner {
    /// Where it stands (`None`: running).
    pub(crate) status: Option<Status>,
    /// A cancel was accepted while it ran ([`cancel_run`]): set under
    /// the lock, before its context is cancelled outside it, so a stretch
    /// ending in between is recorded cancelled too.
    ///
    /// [`cancel_run`]: super::run_control::cancel_run
    pub(crate) cancelling: bool,
    /// The final response of its last stretch.
    pub(crate) response: Option<String>,
    /// The tokens it spent.
    pub(crate) usage: Option<troupe::message::Usage>,
    /// Why it failed.
    pub(crate) error: Option<String>,
    /// The questions it waits on.
    pub(crate) requests: Vec<InputRequest>,
    /// The thread of a run waiting for input, to answer it in.
    pub(crate) thread: Option<Box<Thread>>,
    /// Every event so far.
    pub(crate) events: EventLog,
    /// The run and checkpoint it was forked from (`{run_id, checkpoint}`).
    pub(crate) forked_from: Option<Value>,
    /// The schedule tick that started it (`{schedule, tick}`).
    pub(crate) scheduled: Option<Value>,
    /// Where its completion is POSTed (`{url, headers}`), kept with its
    /// record on a shared database so a worker taking it over tells it.
    pub(crate) webhook: Option<Value>,
    /// A run of another worker followed here (`board/mirror.rs`): its JSON
    /// as that worker last recorded it, shown as it is.
    pub(crate) remote: Option<Value>,
    /// A run taken over from another worker: what that worker recorded of
    /// it (`task`, `session`, `started_at`), shown instead of this run's
    /// blanks.
    pub(crate) origin: Option<Value>,
}

/// Where runs say they ended: the ids, for the registry (`registry.rs`)
/// to weigh.
pub(crate) type Ended = Arc<Mutex<Vec<String>>>;

impl Inner {
    /// The status (a run is running until told otherwise).
    pub(crate) fn status(&self) -> Status {
        self.status.unwrap_or(Status::Running)
    }
}

impl Run {
    pub(crate) fn new(id: String, team: String, task: String, session: Option<String>) -> Arc<Run> {
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
                moved: watch::Sender::new(0),
                ended_to: OnceLock::new(),
            }
        })
    }

    /// Has the run put its id in `ended` when a stretch of it ends it
    /// ([`Run::finish`]).
    pub(crate) fn tell_end(&self, ended: Ended) {
        let _ = self.ended_to.set(ended);
    }

    /// Its changing part, locked (briefly: never across an await).
    pub(crate) fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver woken at every change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A receiver woken when something but an event changes (the
    /// status, the response): to wait for the run's end.
    pub(crate) fn watch_status(&self) -> watch::Receiver<u64> {
        self.moved.subscribe()
    }

    /// Wakes every watcher: something besides the events changed.
    pub(crate) fn bump(&self) {
        self.moved.send_modify(|n| *n += 1);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Logs an event as `troupe run --events jsonl` writes it.
    pub(crate) fn log(&self, record: &EventRecord) {
        self.inner().events.push(record.clone());
        // Nobody to wake (most runs: nothing streams them), no wake-up —
        // tokio's watch takes eight locks for one. A reader subscribing
        // after this check reads the event from the log before it waits.
        let watched = self.changed.receiver_count() > 0;
        self.changed.send_if_modified(|n| {
            *n += 1;
            watched
        });
    }

    /// Records how a stretch of the run ended. A run whose context was
    /// cancelled (`POST /runs/{id}/cancel`, A2A's `CancelTask`) ends
    /// `cancelled` however its stretch came back — completed, waiting for
    /// input, failed — so a cancel racing an answer has one outcome.
    pub(crate) fn finish(&self, result: Result<RunResult, String>) {
        {
            let mut inner = self.inner();
            let cancelled = inner.cancelling || self.ctx.is_cancelled();
            match result {
                Ok(r) if cancelled => {
                    inner.usage = Some(r.usage);
                    inner.response = Some(r.final_text());
                    inner.status = Some(Status::Cancelled);
                    inner.requests.clear();
                    inner.thread = None;
                }
                Err(_) if cancelled => {
                    inner.status = Some(Status::Cancelled);
                    inner.requests.clear();
                    inner.thread = None;
                }
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
                            // Non-exhaustive: a later status ended the run
                            // without failing, as a stop does.
                            _ => Status::Stopped,
                        });
                    } else {
                        inner.status = Some(Status::WaitingForInput);
                        inner.requests = pending;
                        inner.thread = Some(Box::new(r.thread));
                    }
                }
                Err(e) => {
                    inner.status = Some(Status::Failed);
                    inner.error = Some(troupe::secrets::redact(&e).into_owned());
                }
            }
            if inner.status().ended() {
                // A finished run's log is kept as long as the registry
                // keeps the run: in one block.
                inner.events.settle();
                if let Some(ended) = self.ended_to.get() {
                    ended
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(self.id.clone());
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

    /// Roughly how many bytes its record holds (task, events, response).
    pub(crate) fn weight(&self) -> usize {
        let inner = self.inner();
        let events = inner.events.weight();
        self.task.len()
            + events
            + inner.response.as_ref().map_or(0, String::len)
            + inner.error.as_ref().map_or(0, String::len)
            + inner.thread.as_ref().map_or(0, |_| 1024)
            + 512
    }

    /// When it started, in milliseconds since the Unix epoch.
    pub(crate) fn started_ms(&self) -> i64 {
        self.started_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// `GET /runs` shows this.
    pub(crate) fn summary(&self) -> Value {
        if self.inner().remote.is_some() {
            return summary_of(&self.detail());
        }
        json!({
            "id": self.id,
            "team": self.team,
            "status": self.inner().status().as_str(),
            "task": self.task,
            "session": self.session,
            "started_at": humantime::format_rfc3339_millis(self.started_at).to_string(),
            "forked_from": self.inner().forked_from,
            "scheduled": self.inner().scheduled,
        })
    }

    /// `GET /runs/{id}` shows this (and the SSE stream's `end` event).
    pub(crate) fn detail(&self) -> Value {
        let inner = self.inner();
        if let Some(remote) = &inner.remote {
            return remote.clone();
        }
        let mut detail = json!({
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
            "forked_from": inner.forked_from,
            "scheduled": inner.scheduled,
        });
        if let (Some(origin), Some(d)) = (&inner.origin, detail.as_object_mut()) {
            for key in ["task", "session", "started_at"] {
                if let Some(v) = origin.get(key) {
                    d.insert(key.into(), v.clone());
                }
            }
        }
        detail
    }
}

/// A run's summary (`GET /runs`) from its detail (`GET /runs/{id}`).
pub(crate) fn summary_of(detail: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in [
        "id",
        "team",
        "status",
        "task",
        "session",
        "started_at",
        "forked_from",
        "scheduled",
    ] {
        out.insert(key.into(), detail.get(key).cloned().unwrap_or(Value::Null));
    }
    Value::Object(out)
}

/// Usage as OpenAI shows it.
pub(crate) fn usage_json(u: troupe::message::Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Arc<Run> {
        Run::new("run-1".into(), "desk".into(), "hello".into(), None)
    }

    #[test]
    fn a_stretch_ending_after_a_cancel_was_accepted_ends_the_run_cancelled() {
        // `cancel_run` marks the run under the lock, then cancels its
        // context outside it: a stretch ending in between is cancelled.
        let cancelled = run();
        assert_eq!(
            super::super::run_control::cancel_run(&cancelled).ok(),
            Some(Status::Running)
        );
        let marked = run();
        marked.inner().cancelling = true;
        assert!(!marked.ctx.is_cancelled());
        for r in [&cancelled, &marked] {
            r.finish(Err("the model went away".into()));
            let inner = r.inner();
            assert_eq!(inner.status(), Status::Cancelled);
            assert_eq!(inner.error, None);
        }
        let failed = run();
        failed.finish(Err("the model went away".into()));
        assert_eq!(failed.inner().status(), Status::Failed);
    }
}
