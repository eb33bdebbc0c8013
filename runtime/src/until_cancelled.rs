//! [`UntilCancelled`]: a future raced against its context's cancellation,
//! or — when whoever polls the turn drops it on cancellation — not raced.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio_util::sync::WaitForCancellationFuture;

pin_project! {
    /// What [`RunContext::run_until_cancelled`](crate::RunContext::run_until_cancelled)
    /// returns: `fut`'s output, or `None` if the context was cancelled
    /// first (checked before `fut` at every poll, as a `biased` select
    /// would).
    ///
    /// Under a workflow's turn nothing is raced: the run drops the turn's
    /// future as soon as its turns are cancelled, so waiting for the
    /// cancellation as well would only register (and unregister) a waiter
    /// with the token on every model call.
    #[must_use = "futures do nothing unless awaited"]
    pub struct UntilCancelled<'a, F> {
        #[pin]
        fut: F,
        #[pin]
        cancelled: Option<WaitForCancellationFuture<'a>>,
    }
}

impl<'a, F> UntilCancelled<'a, F> {
    /// `fut`, raced against `cancelled` if there is one to race.
    pub(crate) fn new(fut: F, cancelled: Option<WaitForCancellationFuture<'a>>) -> Self {
        UntilCancelled { fut, cancelled }
    }
}

impl<F: Future> Future for UntilCancelled<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(cancelled) = this.cancelled.as_pin_mut()
            && cancelled.poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        this.fut.poll(cx).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn a_cancelled_token_wins_and_a_missing_one_never_does() {
        let token = CancellationToken::new();
        token.cancel();
        let raced = UntilCancelled::new(std::future::ready(1), Some(token.cancelled()));
        assert_eq!(raced.await, None);
        let unraced = UntilCancelled::new(std::future::ready(2), None);
        assert_eq!(unraced.await, Some(2));
        let live = CancellationToken::new();
        let raced = UntilCancelled::new(std::future::ready(3), Some(live.cancelled()));
        assert_eq!(raced.await, Some(3));
    }

    #[tokio::test]
    async fn a_cancellation_wakes_a_waiting_future() {
        let token = CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            cancel.cancel();
        });
        let raced = UntilCancelled::new(std::future::pending::<()>(), Some(token.cancelled()));
        assert_eq!(raced.await, None);
    }
}
