//! [`EventStream`]: the receiving end of [`RunContext::stream`] — a
//! context's events, as they happen, to read in the caller's own task.
//!
//! [`RunContext::stream`]: crate::RunContext::stream

use tokio::sync::mpsc;

use crate::event::EventRecord;

/// The receiving end of [`RunContext::stream`](crate::RunContext::stream):
/// events as they happen.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<EventRecord>,
}

impl EventStream {
    /// The stream of what `rx`'s senders send.
    pub(crate) fn from_receiver(rx: mpsc::UnboundedReceiver<EventRecord>) -> Self {
        EventStream { rx }
    }

    /// The next event; `None` once every context that could send is gone.
    pub async fn next(&mut self) -> Option<EventRecord> {
        self.rx.recv().await
    }

    /// Events already received, without waiting.
    pub fn drain_ready(&mut self) -> Vec<EventRecord> {
        let mut out = Vec::new();
        while let Ok(e) = self.rx.try_recv() {
            out.push(e);
        }
        out
    }
}

impl futures::Stream for EventStream {
    type Item = EventRecord;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<EventRecord>> {
        self.rx.poll_recv(cx)
    }
}
