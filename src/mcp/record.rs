//! The host's record of the runs calls start (`troupe serve` lists them
//! in `GET /runs` beside its other runs): each call's run is recorded when
//! it starts, every event of it logged, and each stretch's end (the
//! answer, a failure, a question waiting) noted; cancelling the record
//! (`POST /runs/{id}/cancel`) cancels the run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;
use troupe::{RunContext, RunResult, event::EventRecord};

/// One run's record on the host.
pub(crate) trait RunRecord: Send + Sync {
    /// The run's id on the host (also its engine run id).
    fn id(&self) -> String;
    /// The token that cancels it from the host's side.
    fn cancellation(&self) -> CancellationToken;
    /// Logs one of its events.
    fn event(&self, record: &EventRecord);
    /// Notes how a stretch of it ended.
    fn finish(&self, result: Result<RunResult, String>);
}

/// Starts the record of a run of a team (its name) on a task.
pub(crate) type Recorder = Arc<dyn Fn(&str, &str) -> Arc<dyn RunRecord> + Send + Sync>;

/// The records of the runs under way or waiting, by run id.
#[derive(Default)]
pub(super) struct Records {
    recorder: Option<Recorder>,
    open: Mutex<HashMap<String, Arc<dyn RunRecord>>>,
}

impl Records {
    /// Records kept by `recorder` (none: nothing is recorded).
    pub(super) fn new(recorder: Option<Recorder>) -> Self {
        Records {
            recorder,
            open: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<dyn RunRecord>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The record of a new run of `team` on `task`, if the host keeps them.
    pub(super) fn start(&self, team: &str, task: &str) -> Option<Arc<dyn RunRecord>> {
        let record = (self.recorder.as_ref()?)(team, task);
        self.lock().insert(record.id(), record.clone());
        Some(record)
    }

    /// Notes how a stretch of the run of `ctx` ended; `done` when the run
    /// will not go on (its record is then let go).
    pub(super) fn settled(&self, ctx: &RunContext, result: Result<RunResult, String>, done: bool) {
        let Some(id) = ctx.run_id() else { return };
        let record = if done {
            self.lock().remove(&**id)
        } else {
            self.lock().get(&**id).cloned()
        };
        if let Some(r) = record {
            r.finish(result);
        }
    }
}
