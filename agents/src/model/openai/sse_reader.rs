//! Reading a streamed answer: server-sent events decoded into
//! [`ChatDelta`]s as they arrive, up to `[DONE]`, the end of the body, or
//! the first error (after which the rest is ignored).

use std::collections::VecDeque;

use super::{OpenAiClient, error_chain};
use crate::error::ModelError;
use crate::model::sse::{SseDecoder, SseEvent};
use crate::model::{ChatDelta, ChatStream, openai_wire};

/// The deltas of a streamed `response` of `client`, read as they arrive.
pub(super) fn stream(client: OpenAiClient, response: reqwest::Response) -> ChatStream {
    let reader = SseReader {
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
struct SseReader {
    client: OpenAiClient,
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    pending: VecDeque<Result<ChatDelta, ModelError>>,
}

impl SseReader {
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
                    // Servers that end without `[DONE]` are accepted.
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
            return; // after `[DONE]` or an error, the rest is ignored
        }
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.response = None;
            return;
        }
        match openai_wire::parse_chunk(data) {
            Ok(deltas) => self.pending.extend(deltas.into_iter().map(Ok)),
            Err(e) => {
                self.pending
                    .push_back(Err(self.client.decode_error(e, data)));
                self.response = None;
            }
        }
    }
}
