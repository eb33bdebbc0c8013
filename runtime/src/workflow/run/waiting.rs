//! The run's turns still waiting after their actor's first poll, polled by
//! the run's own task beside its mailbox (see `protocol::TurnBack`).
//!
//! Most runs have one such turn at a time (a group chat waiting on its
//! model): it is polled directly, with nothing allocated. Turns beside it
//! (a fan-out waiting on its models) go into a `FuturesUnordered`, made on
//! first need, which polls only the turns that were woken — so a wake-up
//! costs the same with ten thousand turns waiting as with two.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::FuturesUnordered;

use crate::workflow::protocol::{TurnEnd, WaitingTurn};

/// The turns a run polls (see the module's documentation).
#[derive(Default)]
pub(super) struct Waiting {
    /// The first turn waiting, polled directly.
    lone: Option<WaitingTurn>,
    /// Turns waiting beside it.
    beside: Option<FuturesUnordered<WaitingTurn>>,
}

impl Waiting {
    /// Adds `turn`, to be polled from now on.
    pub(super) fn push(&mut self, turn: WaitingTurn) {
        if self.lone.is_none() {
            self.lone = Some(turn);
        } else {
            self.beside
                .get_or_insert_with(FuturesUnordered::new)
                .push(turn);
        }
    }

    /// Whether no turn waits.
    pub(super) fn is_empty(&self) -> bool {
        self.lone.is_none() && self.beside.as_ref().is_none_or(|b| b.is_empty())
    }

    /// Polls the waiting turns: the end of one that ended.
    pub(super) fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<TurnEnd> {
        if let Some(turn) = &mut self.lone
            && let Poll::Ready(end) = Pin::new(turn).poll(cx)
        {
            self.lone = None;
            return Poll::Ready(end);
        }
        if let Some(beside) = &mut self.beside
            && let Poll::Ready(Some(end)) = Pin::new(beside).poll_next(cx)
        {
            return Poll::Ready(end);
        }
        Poll::Pending
    }

    /// Drops every waiting turn: each one's end, cancelled.
    pub(super) fn cancel_all(&mut self) -> impl Iterator<Item = TurnEnd> + use<> {
        let lone = self.lone.take();
        let beside = self.beside.take().into_iter().flatten();
        lone.into_iter().chain(beside).map(WaitingTurn::cancelled)
    }
}
