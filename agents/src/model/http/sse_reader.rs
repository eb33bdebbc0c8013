//! Reading a streamed answer: server-sent events decoded into
//! [`ChatDelta`]s (by the provider's [`Dialect`]) as they arrive, up to the
//! event that ends the stream, the end of the body, or the first error
//! (after which the rest is ignored).

use std::collections::VecDeque;

use super::wire::EventReader;
use super::{Dialect, HttpModel, error_chain};
use crate::error::ModelError;
use crate::model::sse::{SseDecoder, SseEvent};
use crate::model::{ChatDelta, ChatRequest, ChatStream};

/// The deltas of a streamed `response` of `client` to `request`, read as
/// they arrive.
pub(super) fn stream<W: Dialect>(
    client: HttpModel<W>,
    request: &ChatRequest,
    response: reqwest::Response,
) -> ChatStream {
    let reader = SseReader {
        events: client.inner.dialect.stream_reader(request),
        client,
        response: Some(response),
        decoder: SseDecoder::new(),
        pending: VecDeque::new(),
    };
    Box::pin(futures::stream::unfold(reader, |mut r| async move {
        r.next().await.map(|item| (item, r))
    }))
}

/// The state of a streamed response being read.
struct SseReader<W: Dialect> {
    client: HttpModel<W>,
    /// What the events read so far told (the wire format's reader).
    events: W::Stream,
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    pending: VecDeque<Result<ChatDelta, ModelError>>,
}

impl<W: Dialect> SseReader<W> {
    /// The next delta, or `None` at the end.
    async fn next(&mut self) -> Option<Result<ChatDelta, ModelError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            let response = self.response.as_mut()?;
            let idle = self.client.inner.timeout;
            match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => self.fail(format!("no data for {idle:?}")),
                Ok(Err(e)) => self.fail(self.client.redact(&error_chain(&e.without_url()))),
                Ok(Ok(Some(bytes))) => {
                    for event in self.decoder.feed(&bytes) {
                        self.take_event(event);
                    }
                }
                Ok(Ok(None)) => {
                    // Servers that end without their closing event are accepted.
                    if let Some(event) = self.decoder.finish() {
                        self.take_event(event);
                    }
                    self.response = None;
                }
            }
        }
    }

    fn fail(&mut self, message: String) {
        self.pending.push_back(Err(ModelError::Stream {
            endpoint: self.client.inner.endpoint.clone(),
            message,
        }));
        self.response = None;
    }

    fn take_event(&mut self, event: SseEvent) {
        if self.response.is_none() {
            return; // after the end or an error, the rest is ignored
        }
        if event.data.trim().is_empty() {
            return;
        }
        match self.events.event(&event) {
            Ok(step) => {
                self.pending.extend(step.deltas.into_iter().map(Ok));
                if step.done {
                    self.response = None;
                }
            }
            Err(e) => {
                let error = self.client.decode_error(e, event.data.trim());
                self.pending.push_back(Err(error));
                self.response = None;
            }
        }
    }
}
