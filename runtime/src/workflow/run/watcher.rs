//! The watcher: what turns what happens outside the run — the context's
//! cancellation, graceful stop and deadline, the stop condition's timeout,
//! an external stop handle — into messages to the run's supervisor.
//!
//! A run with a timeout, a deadline or a stop handle has a task of its
//! own watching them ([`Watcher`]). Most runs have none of these and watch
//! only their context's cancellation and graceful stop: their own task
//! does that, beside its mailbox ([`Stops`]) — no second task a run, which
//! was most of what thousands of runs waiting at once held besides their
//! state.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;
use tokio_util::sync::WaitForCancellationFutureOwned;

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
    /// run `myself` — unless the run watches only its context, which its
    /// own task does ([`Stops::of`]).
    pub(super) fn spawn(ctx: &RunContext, stop: Option<&StopCondition>, myself: RunAddr) -> Self {
        if watches_only_context(ctx, stop) {
            return Watcher::default();
        }
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

/// Whether a run of `ctx` and `stop` watches nothing but its context's
/// cancellation and graceful stop (no timeout, deadline or stop handle).
fn watches_only_context(ctx: &RunContext, stop: Option<&StopCondition>) -> bool {
    let mut handles: Vec<StopHandle> = Vec::new();
    if let Some(s) = stop {
        s.external_handles(&mut handles);
    }
    ctx.deadline().is_none()
        && stop.and_then(StopCondition::shortest_timeout).is_none()
        && handles.is_empty()
}

/// A run's context's cancellation and graceful stop, watched by the run's
/// own task (a run that watches nothing else: see [`Watcher::spawn`]).
/// The task pins both where it lives and polls them with [`Stops::poll`].
pub(super) struct Stops {
    /// The context's cancellation; `None` once taken in, or when a
    /// watcher task watches it.
    pub(super) cancelled: Option<WaitForCancellationFutureOwned>,
    /// The context's graceful stop, likewise.
    pub(super) stopping: Option<WaitForCancellationFutureOwned>,
}

impl Stops {
    /// The stops of a run of `ctx` and `stop` to watch in its own task;
    /// none when its watcher task watches them.
    pub(super) fn of(ctx: &RunContext, stop: Option<&StopCondition>) -> Self {
        let own = watches_only_context(ctx, stop);
        Stops {
            cancelled: own.then(|| ctx.cancellation().clone().cancelled_owned()),
            stopping: own.then(|| ctx.stopping_owned()),
        }
    }

    /// The next stop to take in, as a watcher would send it: a graceful
    /// stop once, then the cancellation once (after which neither is
    /// watched: the run is over).
    pub(super) fn poll(
        mut cancelled: Pin<&mut Option<WaitForCancellationFutureOwned>>,
        mut stopping: Pin<&mut Option<WaitForCancellationFutureOwned>>,
        cx: &mut Context<'_>,
    ) -> Poll<RunMsg> {
        if let Some(f) = cancelled.as_mut().as_pin_mut()
            && f.poll(cx).is_ready()
        {
            cancelled.set(None);
            stopping.set(None);
            return Poll::Ready(RunMsg::Cancel);
        }
        if let Some(f) = stopping.as_mut().as_pin_mut()
            && f.poll(cx).is_ready()
        {
            stopping.set(None);
            return Poll::Ready(RunMsg::GracefulStop);
        }
        Poll::Pending
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the stops give now (polled once, as the run's task does).
    fn now(
        cancelled: Pin<&mut Option<WaitForCancellationFutureOwned>>,
        stopping: Pin<&mut Option<WaitForCancellationFutureOwned>>,
    ) -> Option<&'static str> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match Stops::poll(cancelled, stopping, &mut cx) {
            Poll::Ready(RunMsg::Cancel) => Some("cancel"),
            Poll::Ready(RunMsg::GracefulStop) => Some("graceful"),
            Poll::Ready(_) => Some("other"),
            Poll::Pending => None,
        }
    }

    #[test]
    fn a_run_watching_only_its_context_hears_a_graceful_stop_then_the_cancel_once_each() {
        let ctx = RunContext::new();
        let Stops {
            cancelled,
            stopping,
        } = Stops::of(&ctx, None);
        assert!(
            cancelled.is_some() && stopping.is_some(),
            "watched in the run's task"
        );
        let (mut cancelled, mut stopping) = (std::pin::pin!(cancelled), std::pin::pin!(stopping));
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), None);
        ctx.stop_gracefully();
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), Some("graceful"));
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), None);
        ctx.cancel();
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), Some("cancel"));
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), None);
    }

    #[test]
    fn a_cancel_first_is_heard_alone() {
        let ctx = RunContext::new();
        let Stops {
            cancelled,
            stopping,
        } = Stops::of(&ctx, None);
        let (mut cancelled, mut stopping) = (std::pin::pin!(cancelled), std::pin::pin!(stopping));
        ctx.stop_gracefully();
        ctx.cancel();
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), Some("cancel"));
        assert_eq!(now(cancelled.as_mut(), stopping.as_mut()), None);
    }

    #[test]
    fn a_run_with_a_timeout_leaves_its_stops_to_its_watcher_task() {
        let ctx = RunContext::new();
        let stop = StopCondition::timeout(std::time::Duration::from_secs(60));
        let stops = Stops::of(&ctx, Some(&stop));
        assert!(stops.cancelled.is_none() && stops.stopping.is_none());
    }
}
