//! The watcher: what turns what happens outside the run — the context's
//! cancellation, graceful stop and deadline, the stop condition's timeout,
//! an external stop handle — into messages to the run's supervisor.
//!
//! A run with a timeout, a deadline or a stop handle has a task of its own
//! watching them, which sends the run a message when one fires. Most runs
//! have none of these and watch only their context's cancellation and
//! graceful stop: the run's own task does that ([`Watcher::take_stops`]
//! between the turns it takes in, [`Watcher::poll_stops`] beside its
//! mailbox while it waits), and a run never waiting holds nothing for it.
//! A task per run was most of what thousands of runs waiting at once held
//! besides their state, and spawning it a cost of every run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use pin_project_lite::pin_project;
use tokio::task::JoinHandle;
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::context::RunContext;
use crate::stop::{StopCondition, StopHandle};
use crate::workflow::protocol::{RunAddr, RunMsg};

/// How one run watches what happens outside it; it stops with the run.
#[derive(Default)]
pub(super) enum Watcher {
    /// Nothing watched (yet, or any more: the run is over).
    #[default]
    Off,
    /// A task watching a timeout, a deadline or stop handles, and the
    /// context, sending the run a message when one fires.
    Task {
        /// Held for its drop, which aborts the task.
        _task: Aborted,
    },
    /// Only the context's cancellation and graceful stop, watched by the
    /// run's own task.
    Own(OwnStops),
}

/// The context's stops as the run's own task watches them.
#[derive(Default)]
pub(super) struct OwnStops {
    /// The graceful stop was taken in (a cancel after it still is).
    graceful_taken: bool,
    /// The cancel was taken in: nothing is watched any more.
    cancel_taken: bool,
    /// How many more takes-in pass before the tokens are read again
    /// ([`Watcher::take_stops`]).
    skip: u8,
    /// What wakes the run's task while it waits; made when it first waits.
    waits: Option<Pin<Box<Waits>>>,
}

/// How often [`Watcher::take_stops`] reads the tokens: once in this many
/// calls.
const LOOK_EVERY: u8 = 16;

impl OwnStops {
    /// Reads the tokens: the stop to take in now, if one was asked for
    /// and not taken in yet.
    fn look(&mut self, ctx: &RunContext) -> Option<RunMsg> {
        if self.cancel_taken {
            return None;
        }
        if ctx.is_cancelled() {
            self.cancel_taken = true;
            self.waits = None;
            return Some(RunMsg::Cancel);
        }
        if !self.graceful_taken && ctx.is_stopping() {
            self.graceful_taken = true;
            return Some(RunMsg::GracefulStop);
        }
        None
    }
}

pin_project! {
    /// The context's two stops as futures, each registered with its token
    /// to wake `waker`.
    struct Waits {
        #[pin]
        cancelled: WaitForCancellationFutureOwned,
        #[pin]
        stopping: WaitForCancellationFutureOwned,
        // The waker both were last polled with.
        waker: Option<Waker>,
    }
}

impl Watcher {
    /// Starts watching `ctx` and the timeouts and handles of `stop` for
    /// run `myself`: a task if there is more than the context to watch.
    pub(super) fn spawn(ctx: &RunContext, stop: Option<&StopCondition>, myself: RunAddr) -> Self {
        let timeout = stop.and_then(|s| s.shortest_timeout());
        let deadline = ctx.deadline();
        let mut handles: Vec<StopHandle> = Vec::new();
        if let Some(s) = stop {
            s.external_handles(&mut handles);
        }
        if timeout.is_none() && deadline.is_none() && handles.is_empty() {
            return Watcher::Own(OwnStops::default());
        }
        let cancel = ctx.cancellation().clone();
        let graceful = ctx.clone();
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
        Watcher::Task {
            _task: Aborted(task),
        }
    }

    /// The stop of `ctx` to take in now, if the run watches its context
    /// itself and one was asked for since it last looked: a graceful stop
    /// once, then the cancel once (a cancel first is taken alone), as a
    /// watching task would have sent them.
    ///
    /// Called between the turns a run takes in without waiting, it reads
    /// the tokens (a lock each) at the first call and every
    /// [`LOOK_EVERY`]th after: a run of function nodes that never waits
    /// would otherwise pay two locks a turn. Such a run sees a graceful
    /// stop within that many turns; a cancel stops it sooner, at its next
    /// turn, whose first poll is skipped once the context is cancelled.
    pub(super) fn take_stops(&mut self, ctx: &RunContext) -> Option<RunMsg> {
        let Watcher::Own(own) = self else {
            return None;
        };
        if own.skip > 0 {
            own.skip -= 1;
            return None;
        }
        own.skip = LOOK_EVERY - 1;
        own.look(ctx)
    }

    /// [`take_stops`](Watcher::take_stops) for a run about to wait:
    /// pending (and the task woken when one is asked for) if none is.
    pub(super) fn poll_stops(&mut self, ctx: &RunContext, cx: &mut Context<'_>) -> Poll<RunMsg> {
        let Watcher::Own(own) = self else {
            return Poll::Pending;
        };
        if own.cancel_taken {
            return Poll::Pending;
        }
        let waits = own.waits.get_or_insert_with(|| {
            Box::pin(Waits {
                cancelled: ctx.cancellation().clone().cancelled_owned(),
                stopping: ctx.stopping_owned(),
                waker: None,
            })
        });
        let waits = waits.as_mut().project();
        if waits
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            // Both are registered to wake this task already, and stay so
            // until they fire: a stop asked for since wakes it, and
            // reading the tokens finds it. Polling them again would take
            // each token's waiter list to learn the same (two of them, a
            // lock each: ~5% of a waiting run's wake-ups in `conc`).
            return own.look(ctx).map_or(Poll::Pending, Poll::Ready);
        }
        // Registered with both tokens, then read: a stop asked for after
        // this poll wakes the task.
        let cancelled = waits.cancelled.poll(cx).is_ready();
        let stopping = !own.graceful_taken && waits.stopping.poll(cx).is_ready();
        *waits.waker = Some(cx.waker().clone());
        if (cancelled || stopping)
            && let Some(stop) = own.look(ctx)
        {
            return Poll::Ready(stop);
        }
        Poll::Pending
    }

    /// Stops watching: the run is over.
    pub(super) fn stop(&mut self) {
        // A watching task is aborted as it is dropped.
        *self = Watcher::Off;
    }
}

/// A watching task, aborted when dropped (with its run).
pub(super) struct Aborted(JoinHandle<()>);

impl Drop for Aborted {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::*;

    /// A waker counting its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What `poll_stops` gives now, as a name.
    fn poll(w: &mut Watcher, ctx: &RunContext, waker: &Waker) -> Option<&'static str> {
        match w.poll_stops(ctx, &mut Context::from_waker(waker)) {
            Poll::Ready(RunMsg::Cancel) => Some("cancel"),
            Poll::Ready(RunMsg::GracefulStop) => Some("graceful"),
            Poll::Ready(_) => Some("other"),
            Poll::Pending => None,
        }
    }

    fn own(ctx: &RunContext) -> Watcher {
        let (addr, _mailbox) = RunAddr::new();
        let w = Watcher::spawn(ctx, None, addr);
        assert!(
            matches!(w, Watcher::Own(_)),
            "no task for a run watching only its context"
        );
        w
    }

    #[test]
    fn a_waiting_run_is_woken_for_a_graceful_stop_then_the_cancel_once_each() {
        let ctx = RunContext::new();
        let mut w = own(&ctx);
        let count = Arc::new(Count::default());
        let waker = Waker::from(count.clone());
        assert_eq!(poll(&mut w, &ctx, &waker), None);
        ctx.stop_gracefully();
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "woken by the graceful stop"
        );
        assert_eq!(poll(&mut w, &ctx, &waker), Some("graceful"));
        assert_eq!(poll(&mut w, &ctx, &waker), None);
        ctx.cancel();
        assert!(count.0.load(Ordering::SeqCst) >= 2, "woken by the cancel");
        assert_eq!(poll(&mut w, &ctx, &waker), Some("cancel"));
        assert_eq!(poll(&mut w, &ctx, &waker), None);
        assert!(takes(&mut w, &ctx, 2 * LOOK_EVERY).is_empty());
    }

    #[test]
    fn a_run_polled_by_another_task_is_woken_there() {
        let ctx = RunContext::new();
        let mut w = own(&ctx);
        let first = Arc::new(Count::default());
        let second = Arc::new(Count::default());
        assert_eq!(poll(&mut w, &ctx, &Waker::from(first.clone())), None);
        // Polled with the same waker again: read, not registered again.
        assert_eq!(poll(&mut w, &ctx, &Waker::from(first.clone())), None);
        assert_eq!(poll(&mut w, &ctx, &Waker::from(second.clone())), None);
        ctx.stop_gracefully();
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the waker it last waited with is woken"
        );
        assert_eq!(
            poll(&mut w, &ctx, &Waker::from(second.clone())),
            Some("graceful")
        );
        ctx.cancel();
        assert!(second.0.load(Ordering::SeqCst) >= 2, "woken by the cancel");
        assert_eq!(
            poll(&mut w, &ctx, &Waker::from(second.clone())),
            Some("cancel")
        );
    }

    /// What `take_stops` gives over `n` calls, as names.
    fn takes(w: &mut Watcher, ctx: &RunContext, n: u8) -> Vec<&'static str> {
        (0..n)
            .filter_map(|_| w.take_stops(ctx))
            .map(|m| match m {
                RunMsg::Cancel => "cancel",
                RunMsg::GracefulStop => "graceful",
                _ => "other",
            })
            .collect()
    }

    #[test]
    fn stops_asked_for_between_waits_are_taken_once_and_not_again_while_waiting() {
        let ctx = RunContext::new();
        let mut w = own(&ctx);
        ctx.stop_gracefully();
        assert_eq!(
            takes(&mut w, &ctx, 1),
            ["graceful"],
            "read at the first call"
        );
        assert!(takes(&mut w, &ctx, 3 * LOOK_EVERY).is_empty(), "taken once");
        assert_eq!(poll(&mut w, &ctx, Waker::noop()), None, "taken already");
        // Seen within LOOK_EVERY calls, wherever the count stands.
        for _ in 0..5 {
            w.take_stops(&ctx);
        }
        ctx.cancel();
        assert_eq!(takes(&mut w, &ctx, LOOK_EVERY), ["cancel"]);
        assert_eq!(poll(&mut w, &ctx, Waker::noop()), None, "taken already");
        assert!(takes(&mut w, &ctx, 2 * LOOK_EVERY).is_empty());
    }

    #[test]
    fn a_cancel_first_is_taken_alone() {
        let ctx = RunContext::new();
        let mut w = own(&ctx);
        ctx.stop_gracefully();
        ctx.cancel();
        assert_eq!(poll(&mut w, &ctx, Waker::noop()), Some("cancel"));
        assert_eq!(poll(&mut w, &ctx, Waker::noop()), None);
        assert!(takes(&mut w, &ctx, 2 * LOOK_EVERY).is_empty());
    }

    #[tokio::test]
    async fn a_run_with_a_timeout_has_a_task_send_its_stops() {
        let ctx = RunContext::new();
        let stop = StopCondition::timeout(std::time::Duration::from_secs(60));
        let (addr, _mailbox) = RunAddr::new();
        let mut w = Watcher::spawn(&ctx, Some(&stop), addr);
        assert!(matches!(w, Watcher::Task { .. }));
        ctx.cancel();
        assert!(
            takes(&mut w, &ctx, 2 * LOOK_EVERY).is_empty(),
            "its task sends them"
        );
        assert_eq!(
            poll(&mut w, &ctx, Waker::noop()),
            None,
            "its task sends them"
        );
        w.stop();
        assert!(matches!(w, Watcher::Off));
    }
}
