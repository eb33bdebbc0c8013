//! The watcher: a task that turns what happens outside the run — the
//! context's cancellation, graceful stop and deadline, the stop condition's timeout, an
//! external stop handle — into messages to the run's supervisor.

use tokio::task::JoinHandle;

use crate::context::RunContext;
use crate::stop::{StopCondition, StopHandle};
use crate::workflow::protocol::{RunAddr, RunMsg};

/// The watching task of one run; it ends with the run.
#[derive(Default)]
pub(super) struct Watcher {
    task: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts watching `ctx` and the timeouts and handles of `stop` for
    /// run `myself`.
    pub(super) fn spawn(ctx: &RunContext, stop: Option<&StopCondition>, myself: RunAddr) -> Self {
        let cancel = ctx.cancellation().clone();
        let graceful = ctx.clone();
        let timeout = stop.and_then(|s| s.shortest_timeout());
        let deadline = ctx.deadline();
        let mut handles: Vec<StopHandle> = Vec::new();
        if let Some(s) = stop {
            s.external_handles(&mut handles);
        }
        let task = tokio::spawn(async move {
            let timeout = async {
                match timeout {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let deadline = async {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            let external = async {
                if handles.is_empty() {
                    std::future::pending::<()>().await;
                } else {
                    futures::future::select_all(handles.iter().map(|h| Box::pin(h.stopped())))
                        .await;
                }
            };
            let graceful = graceful.stopping();
            tokio::pin!(timeout, deadline, external, graceful);
            let (mut timeout_done, mut deadline_done, mut external_done) = (false, false, false);
            let mut graceful_done = false;
            loop {
                // After one fires the others are still watched: a timeout
                // inside `All(..)` may not stop the run, but a cancel must.
                let msg = tokio::select! {
                    _ = cancel.cancelled() => RunMsg::Cancel,
                    _ = &mut timeout, if !timeout_done => { timeout_done = true; RunMsg::Timeout }
                    _ = &mut deadline, if !deadline_done => { deadline_done = true; RunMsg::Deadline }
                    _ = &mut external, if !external_done => { external_done = true; RunMsg::External }
                    _ = &mut graceful, if !graceful_done => { graceful_done = true; RunMsg::GracefulStop }
                };
                let cancelled = matches!(msg, RunMsg::Cancel);
                if !myself.send(msg) || cancelled {
                    return;
                }
            }
        });
        Watcher { task: Some(task) }
    }

    /// Stops watching: the run is over.
    pub(super) fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
    }
}
