//! The watcher: a task that turns what happens outside the run — the
//! context's cancellation, graceful stop and deadline, the stop condition's timeout, an
//! external stop handle — into messages to the run's supervisor.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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
        if timeout.is_none() && deadline.is_none() && handles.is_empty() {
            return Watcher {
                task: Some(tokio::spawn(watch_stops(cancel, graceful, myself))),
            };
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

/// The watcher of a run with nothing to watch but its context's
/// cancellation and graceful stop (no timeout, deadline or stop handle:
/// most runs). Its own task, much smaller than the general one's (which
/// keeps room for two timers and the handles' futures): thousands of
/// runs waiting at once each hold one.
async fn watch_stops(cancel: CancellationToken, graceful: RunContext, myself: RunAddr) {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {}
        _ = graceful.stopping() => {
            if !myself.send(RunMsg::GracefulStop) {
                return;
            }
            cancel.cancelled().await;
        }
    }
    myself.send(RunMsg::Cancel);
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_run_that_watches_only_its_context_holds_a_small_watcher() {
        let (addr, _mailbox) = RunAddr::new();
        let ctx = RunContext::new();
        let size = std::mem::size_of_val(&watch_stops(ctx.cancellation().clone(), ctx, addr));
        // Debug builds lay futures out more loosely than release ones.
        assert!(
            size <= 240,
            "the watcher of a run without timeout, deadline or stop handle is {size} bytes: \
             every run waiting on its models holds one"
        );
    }
}
